package conform

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeDeviationRefs: every known deviation points at something the
// repository holds, so a report's "(known: ...)" can be followed: a file
// from the repository's root, and, after ": ", a heading of that file.
func TestReadmeDeviationRefs(t *testing.T) {
	const root = "../../.."
	n := 0
	for _, c := range Cases("", "") {
		for _, d := range c.Deviations {
			n++
			path, heading, isEntry := strings.Cut(d.Ref, ": ")
			if !isEntry {
				path, _, _ = strings.Cut(d.Ref, " (")
			}
			b, err := os.ReadFile(filepath.Join(root, path))
			if err != nil {
				t.Errorf("%s: deviation of %s: Ref %q: %v", c.ID, d.Kind, d.Ref, err)
				continue
			}
			if isEntry && !hasHeading(string(b), heading) {
				t.Errorf("%s: deviation of %s: Ref %q: %s has no heading %q", c.ID, d.Kind, d.Ref, path, heading)
			}
		}
	}
	if n == 0 {
		t.Fatal("no case names a known deviation")
	}
}

// hasHeading reports whether the Markdown text has a heading (any level)
// reading exactly heading.
func hasHeading(text, heading string) bool {
	re := regexp.MustCompile(`(?m)^#+ ` + regexp.QuoteMeta(heading) + `$`)
	return re.MatchString(text)
}
