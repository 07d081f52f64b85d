package scenario

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// quote is an inline code span of a handout.
var quote = regexp.MustCompile("`([^`]+)`")

// TestHandoutsQuoteTheirRuns: every scenario has a handout
// (handouts/NAME.md) that tells how to run it, and every quote in an
// answer (an inline code span) is text the run prints, so a handout cannot
// drift from what the class sees. Every handout names a scenario.
func TestHandoutsQuoteTheirRuns(t *testing.T) {
	files, err := filepath.Glob("handouts/*.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(All()) {
		t.Errorf("%d handouts for %d scenarios", len(files), len(All()))
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".md")
		sc, err := Find(name)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		page := string(b)
		if !strings.Contains(page, "rnic lab run "+name) {
			t.Errorf("%s: does not say how to run it (rnic lab run %s)", f, name)
		}
		r, err := sc.Run()
		if err != nil {
			t.Fatal(err)
		}
		answers := 0
		for _, line := range strings.Split(page, "\n") {
			if !strings.Contains(line, "**Answer:**") && !strings.HasPrefix(line, "   ") {
				continue
			}
			for _, m := range quote.FindAllStringSubmatch(line, -1) {
				answers++
				if !strings.Contains(r.Log, m[1]) {
					t.Errorf("%s: the answer quotes %q, which the run does not print", f, m[1])
				}
			}
		}
		if answers < 2 {
			t.Errorf("%s: %d quotes from the run in its answers, want at least 2", f, answers)
		}
	}
}
