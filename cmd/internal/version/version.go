// Package version is rnic's release and the build's details, as the
// programs' --version prints them.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Release is rnic's version.
const Release = "0.1.0"

// Revision is the source revision make build stamps in with -ldflags
// "-X ...version.Revision=REV" (git describe): the fallback where the
// toolchain recorded no VCS details (go run, a build outside a checkout,
// -buildvcs=false).
var Revision string

// Line is what PROG --version prints: "PROG RELEASE (module VERSION,
// REVISION[+modified] TIME[, tags TAGS]) GOVERSION OS/ARCH", the part in
// parentheses from what the Go toolchain recorded in the binary.
func Line(prog string) string {
	return fmt.Sprintf("%s %s%s %s %s/%s", prog, Release, buildDetails(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// buildDetails is " (module VERSION, REVISION[+modified] TIME[, tags
// TAGS])", or "" without build info.
func buildDetails() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, when, modified, tags string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
			if len(rev) > 12 {
				rev = rev[:12]
			}
		case "vcs.time":
			when = " " + s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+modified"
			}
		case "-tags":
			tags = ", tags " + s.Value
		}
	}
	if rev == "" && Revision != "" {
		rev, modified, when = Revision, "", ""
	}
	out := " (module " + bi.Main.Version
	if rev != "" {
		out += ", " + rev + modified + when
	}
	return out + tags + ")"
}
