package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// outside matches what a file of the repository may not say: a path to
// documents kept beside the checkout rather than in it, or a citation of
// the project's issue tracker, which a clone does not carry.
var outside = regexp.MustCompile(`\.\./shared\b|/work/shared|\bDESIGN\.md\b|\breference/[a-z-]+\.md\b|(?i)\bissues? #?[0-9]+\b`)

// TestTreeStandsAlone reads every text file of the tree (not .git, the
// build outputs or testdata's binary captures) and fails on a line that
// points outside the repository.
func TestTreeStandsAlone(t *testing.T) {
	root := filepath.Join("..", "..")
	self, _ := filepath.Abs("tree_test.go")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") && name != ".ci" || name == "bin" || name == "lib") {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(name) {
		case ".go", ".c", ".h", ".md", ".sh", ".py", ".lua", ".map", ".mk", "":
		default:
			return nil
		}
		if abs, _ := filepath.Abs(path); abs == self {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil || strings.ContainsRune(string(b[:min(len(b), 512)]), 0) {
			return err // a binary (an executable built in the tree)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := outside.FindString(line); m != "" {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s:%d: %q points outside the repository: %s", rel, i+1, m, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
