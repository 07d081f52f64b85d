package main

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestProgramsUseTheVerbsAPI: the programs that have one path for both
// transports import the verbs model, its API and the backends (nic/...,
// memory), not the engines and transports under them (roce, iwarp,
// transport): what they need from there the backends expose. The
// exceptions: nap, a clock utility perf's memory watch sleeps on; the wire
// formats the demo narrates frames and streams with.
func TestProgramsUseTheVerbsAPI(t *testing.T) {
	const mod = "github.com/rnic/rnic/"
	progs := map[string][]string{"perf": {"transport/clock/nap"}, "rping": nil, "pingpong": nil,
		"demo": {"roce/wire", "iwarp/wire"}}
	for prog, extra := range progs {
		allowed := map[string]bool{}
		for _, rel := range extra {
			allowed[mod+rel] = true
		}
		files, err := filepath.Glob(filepath.Join("..", "internal", prog, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no sources (%v)", prog, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			ast, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, im := range ast.Imports {
				path, _ := strconv.Unquote(im.Path.Value)
				rel, ok := strings.CutPrefix(path, mod)
				if !ok || allowed[path] || strings.HasPrefix(rel, "nic/") || strings.HasPrefix(rel, "cmd/internal/") || rel == "nic" || rel == "memory" {
					continue
				}
				t.Errorf("%s imports %s: a program uses the verbs API and the backends", f, path)
			}
		}
	}
}
