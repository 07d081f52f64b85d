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
// transport): what they need from there the backends expose. The one
// exception is nap, a clock utility perf's memory watch sleeps on.
func TestProgramsUseTheVerbsAPI(t *testing.T) {
	const mod = "github.com/rnic/rnic/"
	allowed := map[string]bool{mod + "transport/clock/nap": true}
	for _, prog := range []string{"perf", "rping", "pingpong"} {
		files, err := filepath.Glob(filepath.Join("..", "..", "nic", "tools", prog, "*.go"))
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
				if !ok || allowed[path] || strings.HasPrefix(rel, "nic/") || rel == "nic" || rel == "memory" {
					continue
				}
				t.Errorf("%s imports %s: a program uses the verbs API and the backends", f, path)
			}
		}
	}
}
