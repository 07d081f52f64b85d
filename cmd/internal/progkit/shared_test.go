package progkit

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// programs are the packages whose plumbing this one is.
var programs = []string{"perf", "pingpong", "rping"}

// ownPlumbing are the functions a program would have if it resolved or
// picked addresses itself again, as perf and pingpong each once did (and
// perf's lookup forgot to unmap what pingpong's unmapped).
var ownPlumbing = map[string]bool{"lookup": true, "addrOfFamily": true, "deviceAddrs": true,
	"ownAddr": true, "hasAddr": true, "chooseAddr": true, "clientAddr": true, "tapAddrs": true}

// resolverCalls are the net functions that turn a name into addresses.
var resolverCalls = map[string]bool{"LookupNetIP": true, "LookupIP": true, "LookupHost": true,
	"LookupIPAddr": true, "ResolveIPAddr": true}

// TestProgramsShareThePlumbing: the programs resolve and pick addresses
// only through this package, so a fix here is a fix in all of them.
func TestProgramsShareThePlumbing(t *testing.T) {
	for _, prog := range programs {
		files, err := filepath.Glob(filepath.Join("..", prog, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no sources (%v)", prog, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			file, err := parser.ParseFile(token.NewFileSet(), f, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(file, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.FuncDecl:
					if n.Recv == nil && ownPlumbing[n.Name.Name] {
						t.Errorf("%s defines %s: use progkit's", f, n.Name.Name)
					}
				case *ast.SelectorExpr:
					if resolverCalls[n.Sel.Name] {
						t.Errorf("%s calls %s: resolve with progkit.Program.Lookup", f, n.Sel.Name)
					}
				}
				return true
			})
		}
	}
}
