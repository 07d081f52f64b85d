package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"slices"
	"strings"
	"testing"
)

// module is the import path prefix of rnic's packages.
const module = "github.com/rnic/rnic/"

// layerDoc is the file whose "# Layers" table is the one list of allowed
// imports.
const layerDoc = "../../nic/doc.go"

// TestLayers checks every import `go list ./...` reports, a package's own
// and its tests', against the layer table in nic/doc.go: each package
// belongs to exactly one layer, and each import is one the table allows.
func TestLayers(t *testing.T) {
	tab, err := readLayerTable(layerDoc)
	if err != nil {
		t.Fatal(err)
	}
	pkgs, err := listPackages(t, "../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, pat := range tab.unusedPatterns(pkgs) {
		t.Errorf("%s: the pattern %s matches no package", layerDoc, pat)
	}
	for _, p := range pkgs {
		from := tab.layerOf(p.Path)
		if from == nil {
			t.Errorf("%s is in no layer of %s", p.Path, layerDoc)
			continue
		}
		for _, to := range p.Imports {
			if !tab.allows(p.Path, to, false) {
				t.Errorf("%s (%s) imports %s (%s): no arrow of %s allows it", p.Path, from.name, to, tab.layerName(to), layerDoc)
			}
		}
		for _, to := range p.TestImports {
			if !tab.allows(p.Path, to, true) {
				t.Errorf("tests of %s (%s) import %s (%s): no arrow of %s allows it", p.Path, from.name, to, tab.layerName(to), layerDoc)
			}
		}
	}
}

// TestLayerTableRules: the table's own rules, on a small table, so that
// the check above cannot pass by matching nothing.
func TestLayerTableRules(t *testing.T) {
	const doc = `// # Layers
//
//	layer  | packages          | may import
//	low    | a a/... b         | -
//	mid    | a/m c/...         | low
//	top    | d                 | low
//	       | e                 |
//	except | d                 | c/x
//	tests  |                   | mid
//
// # Next`
	tab, err := parseLayerTable(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		from, to string
		test     bool
		want     bool
	}{
		{"c/y", "a/z", false, true},     // mid → low
		{"a/z", "c/y", false, false},    // low → mid: upward
		{"a/z", "c/y", true, true},      // but a test may
		{"a/z", "d", true, false},       // not above what tests may
		{"a/m", "a", false, true},       // a/m is mid (exact beats a/...)
		{"a/m/n", "c", false, false},    // a/m/n is low (a/m is exact only): low → mid
		{"e", "b", false, true},         // a continuation row is top, which may import low
		{"e", "a/m", false, false},      // but not mid
		{"d", "c/x", false, true},       // except for d → c/x
		{"d", "c/y", false, false},      // and nothing else
		{"a", "a/q/btest", false, true}, // a helper is its parent's layer
		{"b", "nowhere", false, false},  // in no layer
		{"b", "fmt", false, true},       // outside the module
	} {
		if got := tab.allows(module+c.from, importPath(c.to), c.test); got != c.want {
			t.Errorf("%s → %s (test %v): allowed %v, want %v", c.from, c.to, c.test, got, c.want)
		}
	}
	if _, err := parseLayerTable(strings.NewReader(strings.Replace(doc, "| low\n//\t       | e", "| up\n//\t       | e", 1))); err == nil {
		t.Error("a table naming an unknown layer parses")
	}
	if _, err := parseLayerTable(strings.NewReader(strings.Replace(doc, "//	mid    | a/m c/...         | low", "//	mid    | a/m c/...         | top", 1))); err == nil {
		t.Error("a table with an upward arrow parses")
	}
	if _, err := parseLayerTable(strings.NewReader(strings.Replace(doc, "//	top    | d ", "//	top    | b ", 1))); err == nil {
		t.Error("a table with a package in two layers parses")
	}
}

// importPath makes a table-relative path a full one; "fmt" stays itself.
func importPath(rel string) string {
	if rel == "fmt" {
		return rel
	}
	return module + rel
}

// layer is a row of the table: its patterns and the layers it may import.
type layer struct {
	name     string
	index    int
	patterns []string
	imports  []string // layer names
}

// exception lets the packages matching a pattern import more packages.
type exception struct {
	from    string
	imports []string // layer names or package patterns
}

type layerTable struct {
	layers     []*layer
	exceptions []*exception
	tests      []string // layer names
}

// readLayerTable parses the table in the "# Layers" section of a Go file's
// comments.
func readLayerTable(file string) (*layerTable, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tab, err := parseLayerTable(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return tab, nil
}

// parseLayerTable reads the rows "name | patterns | imports" of the code
// block under "# Layers"; a row with no name continues the one before.
func parseLayerTable(r io.Reader) (*layerTable, error) {
	tab := &layerTable{}
	var inSection, header bool
	var cont func(pats, imps []string)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if text, ok := strings.CutPrefix(line, "// #"); ok {
			inSection = strings.TrimSpace(text) == "Layers"
			continue
		}
		row, ok := strings.CutPrefix(line, "//\t")
		if !inSection || !ok {
			continue
		}
		cells := strings.Split(row, "|")
		if len(cells) != 3 {
			return nil, fmt.Errorf("layer table row %q: want 3 cells", row)
		}
		name := strings.TrimSpace(cells[0])
		pats, imps := strings.Fields(cells[1]), strings.Fields(cells[2])
		if slices.Equal(imps, []string{"-"}) {
			imps = nil
		}
		switch {
		case !header:
			header = name == "layer"
		case name == "" && cont != nil:
			cont(pats, imps)
		case name == "except":
			if len(pats) != 1 {
				return nil, fmt.Errorf("except row %q: want one package", row)
			}
			e := &exception{from: pats[0], imports: imps}
			tab.exceptions = append(tab.exceptions, e)
			cont = func(p, i []string) { e.imports = append(e.imports, i...) }
		case name == "tests":
			tab.tests = imps
			cont = func(p, i []string) { tab.tests = append(tab.tests, i...) }
		default:
			l := &layer{name: name, index: len(tab.layers), patterns: pats, imports: imps}
			tab.layers = append(tab.layers, l)
			cont = func(p, i []string) { l.patterns = append(l.patterns, p...); l.imports = append(l.imports, i...) }
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(tab.layers) == 0 {
		return nil, errors.New("no layer table under # Layers")
	}
	return tab, tab.check()
}

// check refuses a table whose arrows point up or at unknown layers, or
// that puts one pattern in two layers.
func (tab *layerTable) check() error {
	owner := map[string]string{}
	for _, l := range tab.layers {
		for _, p := range l.patterns {
			if o, dup := owner[p]; dup {
				return fmt.Errorf("%s is in layer %s and in %s", p, o, l.name)
			}
			owner[p] = l.name
		}
		for _, name := range l.imports {
			to := tab.layer(name)
			if to == nil {
				return fmt.Errorf("layer %s may import %s: no such layer", l.name, name)
			}
			if to.index >= l.index {
				return fmt.Errorf("layer %s may import %s, which is not below it", l.name, name)
			}
		}
	}
	for _, name := range tab.tests {
		if tab.layer(name) == nil {
			return fmt.Errorf("tests may import %s: no such layer", name)
		}
	}
	return nil
}

func (tab *layerTable) layer(name string) *layer {
	for _, l := range tab.layers {
		if l.name == name {
			return l
		}
	}
	return nil
}

// layerOf returns the layer of a package of the module (nil for one in
// no layer or outside the module).
func (tab *layerTable) layerOf(importPath string) *layer {
	rel, ok := strings.CutPrefix(importPath, module)
	if !ok {
		return nil
	}
	if dir, base := path.Split(rel); dir != "" && strings.HasSuffix(base, "test") {
		rel = strings.TrimSuffix(dir, "/") // a test helper serves its parent
	}
	var best *layer
	bestScore := -1
	for _, l := range tab.layers {
		for _, p := range l.patterns {
			if s := matchScore(p, rel); s > bestScore {
				best, bestScore = l, s
			}
		}
	}
	return best
}

// matchScore says how specifically pattern matches rel: -1 not at all, an
// exact match above any "p/..." one, a longer p above a shorter.
func matchScore(pattern, rel string) int {
	if prefix, ok := strings.CutSuffix(pattern, "/..."); ok {
		if rel == prefix || strings.HasPrefix(rel, prefix+"/") {
			return len(prefix)
		}
		return -1
	}
	if rel == pattern {
		return 1 << 20
	}
	return -1
}

func (tab *layerTable) layerName(importPath string) string {
	if l := tab.layerOf(importPath); l != nil {
		return l.name
	}
	return "no layer"
}

// allows says whether the package from may import to (in its tests, if
// test). Imports from outside the module are not the table's business.
func (tab *layerTable) allows(from, to string, test bool) bool {
	if !strings.HasPrefix(to, module) {
		return true
	}
	fl, tl := tab.layerOf(from), tab.layerOf(to)
	if fl == nil || tl == nil {
		return false
	}
	if fl == tl || slices.Contains(fl.imports, tl.name) || (test && slices.Contains(tab.tests, tl.name)) {
		return true
	}
	rel := strings.TrimPrefix(from, module)
	for _, e := range tab.exceptions {
		if matchScore(e.from, rel) < 0 {
			continue
		}
		for _, allowed := range e.imports {
			if allowed == tl.name || matchScore(allowed, strings.TrimPrefix(to, module)) >= 0 {
				return true
			}
		}
	}
	return false
}

// unusedPatterns returns the patterns of the packages column that match
// no package: a row left behind by a move.
func (tab *layerTable) unusedPatterns(pkgs []listedPackage) []string {
	var unused []string
	for _, l := range tab.layers {
		for _, pat := range l.patterns {
			used := slices.ContainsFunc(pkgs, func(p listedPackage) bool {
				return matchScore(pat, strings.TrimPrefix(p.Path, module)) >= 0
			})
			if !used {
				unused = append(unused, pat)
			}
		}
	}
	for _, e := range tab.exceptions {
		if !slices.ContainsFunc(pkgs, func(p listedPackage) bool { return matchScore(e.from, strings.TrimPrefix(p.Path, module)) >= 0 }) {
			unused = append(unused, e.from)
		}
	}
	return unused
}

// listedPackage is a package as go list reports it: its own imports and
// those of its tests (in-package and external together).
type listedPackage struct {
	Path        string
	Imports     []string
	TestImports []string
}

// buildTags are the builds whose imports are checked: the default one,
// and the one with the passthrough backend's cgo half (-tags verbs).
var buildTags = []string{"", "verbs"}

// listPackages lists every package of the module in dir in each of
// buildTags, merging a package's imports over the builds.
func listPackages(t *testing.T, dir string) ([]listedPackage, error) {
	t.Helper()
	byPath := map[string]*listedPackage{}
	var order []string
	for _, tags := range buildTags {
		pkgs, err := listBuild(dir, tags)
		if err != nil {
			return nil, err
		}
		for _, p := range pkgs {
			q, seen := byPath[p.Path]
			if !seen {
				q = &listedPackage{Path: p.Path}
				byPath[p.Path] = q
				order = append(order, p.Path)
			}
			q.Imports = append(q.Imports, p.Imports...)
			q.TestImports = append(q.TestImports, p.TestImports...)
		}
	}
	out := make([]listedPackage, len(order))
	for i, path := range order {
		out[i] = *byPath[path]
		out[i].Imports = uniq(out[i].Imports)
		out[i].TestImports = uniq(out[i].TestImports)
	}
	return out, nil
}

func uniq(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}

// listBuild runs go list -json on every package of the module in dir,
// with the build tags given.
func listBuild(dir, tags string) ([]listedPackage, error) {
	cmd := exec.Command("go", "list", "-tags="+tags, "-json=ImportPath,Imports,TestImports,XTestImports", "./...")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -tags=%q: %w: %s", tags, err, stderr.Bytes())
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath                         string
			Imports, TestImports, XTestImports []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list output: %w", err)
		}
		pkgs = append(pkgs, listedPackage{Path: p.ImportPath, Imports: p.Imports,
			TestImports: append(p.TestImports, p.XTestImports...)})
	}
	if len(pkgs) == 0 {
		return nil, fmt.Errorf("go list -tags=%q found no packages", tags)
	}
	return pkgs, nil
}

// TestReadmeShowsTheLayerTable: the README's "Layers" block is the table
// of nic/doc.go, line for line, so the first page cannot show another one.
func TestReadmeShowsTheLayerTable(t *testing.T) {
	doc, err := os.ReadFile(layerDoc)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	inSection := false
	for _, line := range strings.Split(string(doc), "\n") {
		if text, ok := strings.CutPrefix(line, "// #"); ok {
			inSection = strings.TrimSpace(text) == "Layers"
			continue
		}
		if row, ok := strings.CutPrefix(line, "//\t"); ok && inSection {
			want = append(want, row)
		}
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(readme), "\n## Layers\n")
	if !ok {
		t.Fatal("README.md has no Layers section")
	}
	_, block, _ := strings.Cut(after, "```\n")
	block, _, _ = strings.Cut(block, "```")
	got := strings.Split(strings.TrimRight(block, "\n"), "\n")
	if !slices.Equal(got, want) {
		t.Errorf("README.md's Layers block differs from the table in nic/doc.go:\n%s\nwant:\n%s",
			strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
