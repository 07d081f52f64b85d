// Loading the protocol package: its syntax (for names, doc comments and
// directives) and its types (for the constants' values).

package main

import (
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// pkgInfo is the parsed and type-checked protocol package.
type pkgInfo struct {
	fset  *token.FileSet
	files []*ast.File // sorted by file name, so the output is stable
	names []string    // the files' base names, as files
	info  *types.Info
}

// load parses the non-test Go files of dir and type-checks them,
// importing dependencies from source.
func load(dir string) (*pkgInfo, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", dir, err)
	}
	p := &pkgInfo{fset: token.NewFileSet()}
	var names []string
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		f, err := parser.ParseFile(p.fset, filepath.Join(dir, n), nil, parser.ParseComments)
		if err != nil {
			return nil, fmt.Errorf("parse: %w", err)
		}
		p.files = append(p.files, f)
		p.names = append(p.names, n)
	}
	if len(p.files) == 0 {
		return nil, fmt.Errorf("no Go files in %s", dir)
	}
	p.info = &types.Info{Defs: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: importer.ForCompiler(p.fset, "source", nil)}
	if _, err := conf.Check(p.files[0].Name.Name, p.fset, p.files, p.info); err != nil {
		return nil, fmt.Errorf("type-check %s: %w", dir, err)
	}
	return p, nil
}
