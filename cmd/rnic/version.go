package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version is rnic's release; the build adds what the Go toolchain
// recorded: the module version, the VCS revision and whether the tree had
// changes.
const version = "0.1.0"

// printVersion prints "rnic VERSION" and the build's details in one line.
func printVersion(w io.Writer) {
	fmt.Fprintf(w, "rnic %s%s %s %s/%s\n", version, buildDetails(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// buildDetails is " (module VERSION, REVISION[+modified] DATE)" from the
// build info, or "" without any.
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
	out := " (module " + bi.Main.Version
	if rev != "" {
		out += ", " + rev + modified + when
	}
	return out + tags + ")"
}
