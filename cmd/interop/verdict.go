// Findings: how rxe or siw fail under a fault that rnic rides out.
// Each was established by reading the row's capture, and is written
// up in rnic conform's deviation report (cmd/internal/conform/README.md,
// "Known deviations"). A fault row that fails in one of these ways,
// with rnic's side sound (its frames clean, the failure the guest's
// own), is a FINDING: the table shows it, and it does not fail the run.
// Any other failure stays a FAIL.

package main

import (
	"regexp"
	"strings"
)

// finding is one known way a guest fails under faults.
type finding struct {
	rows *regexp.Regexp // the row labels it applies to
	// guestSays is in the guest tool's last line when it failed so.
	guestSays string
	// rnicMayFail allows rnic's side to fail too, when it only reports
	// the guest's failure (its peer gone or stalled).
	rnicMayFail bool
	note        string // the table's short account
}

// findings are the known ways, established in the lab.
var findings = []finding{}

// knownFinding returns the note of the finding res matches, or "".
func knownFinding(row Row, res Result) string {
	for _, f := range findings {
		if !f.rows.MatchString(row.Label()) || res.guestSide.rc == 0 ||
			!strings.Contains(res.guestSide.tail, f.guestSays) {
			continue
		}
		if res.rnicSide.rc != 0 && !f.rnicMayFail {
			continue
		}
		return f.note
	}
	return ""
}
