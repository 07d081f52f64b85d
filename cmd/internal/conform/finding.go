// Findings: departures from the spec that a case comes across on the way
// to its own rule, named after their root cause.

package conform

import (
	"regexp"
	"strings"
)

// Finding is one departure from the spec seen during a case, beside the
// case's own verdict. Many cases may meet the same root cause (one
// wrongly laid out Terminate is seen by every case that provokes a
// Terminate): Cause names it, so that a report lists it once with every
// rule it touched.
type Finding struct {
	// Cause is the root cause's stable name (a kebab-case word list).
	Cause string `json:"cause"`
	// Section is the spec section broken; Rule says in one line what it
	// asks.
	Section string `json:"section"`
	Rule    string `json:"rule"`
	// Evidence is what shows it: frame numbers and bytes.
	Evidence string `json:"evidence"`
}

// Find records a finding for the case; one per cause is kept.
func (r *Run) Find(f Finding) {
	for _, g := range r.findings {
		if g.Cause == f.Cause {
			return
		}
	}
	r.findings = append(r.findings, f)
}

// CaptureName is the file name of a case's own capture when a run keeps
// one per case (make conform-lab: DIR/conform-KIND/NAME), which a report
// finds its frames in.
func CaptureName(id string) string {
	return strings.Trim(unsafeName.ReplaceAllString(id, "-"), "-") + ".pcap"
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)
