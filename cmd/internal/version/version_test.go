package version

import (
	"runtime/debug"
	"strings"
	"testing"
)

// A binary the toolchain stamped with no revision (tests are such
// binaries) shows the one make build gives it.
func TestRevisionFallback(t *testing.T) {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				t.Skip("this test binary has a VCS stamp: the fallback is not used")
			}
		}
	}
	old := Revision
	t.Cleanup(func() { Revision = old })
	Revision = ""
	if l := Line("rnic"); strings.Contains(l, "v9-test") {
		t.Fatalf("line %q", l)
	}
	Revision = "v9-test"
	if l := Line("rnic"); !strings.Contains(l, ", v9-test)") {
		t.Errorf("line %q does not carry the stamped revision", l)
	}
}
