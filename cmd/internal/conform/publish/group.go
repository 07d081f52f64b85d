// Grouping a run's results by root cause: what a report lists.

package publish

import (
	"regexp"
	"sort"
	"strings"

	"github.com/rnic/rnic/cmd/internal/conform"
)

// Kind says what sort of root cause a group is.
type Kind string

// Kinds of group, in the order a report shows them.
const (
	// KindCrash: the DUT's host died during these cases.
	KindCrash Kind = "DUT crash"
	// KindFinding: a departure met on the way to many rules (a finding).
	KindFinding Kind = "root cause"
	// KindFail: one case's own rule broken.
	KindFail Kind = "FAIL"
	// KindKnown: a documented deviation of the DUT's kind.
	KindKnown Kind = "deviation-known"
)

// Group is one root cause and the rules it touches.
type Group struct {
	Kind Kind
	// Name is the cause's name (a finding's Cause, a crash's kernel line,
	// a known deviation's reference, a FAILed case's rule ID).
	Name string
	// Section and Rule: the spec text broken, and what it asks in one
	// line.
	Section, Rule string
	// Evidence is what shows it (bytes, frames, completions).
	Evidence string
	// Log is a crash's kernel log.
	Log []string
	// Results are the cases it touched, each with its own verdict.
	Results []conform.Result
}

// First is the case whose frames a report draws for the group.
func (g *Group) First() conform.Result { return g.Results[0] }

// Groups sorts rep's results into root causes: crashes by their kernel
// line, findings by cause, known deviations by reference, and each FAIL
// by its own rule (a FAIL with a finding shows under both).
func Groups(rep *conform.Report) []Group {
	var out []Group
	index := map[string]int{}
	add := func(k Kind, name string, r conform.Result, fill func(*Group)) {
		key := string(k) + "\x00" + name
		i, ok := index[key]
		if !ok {
			i = len(out)
			index[key] = i
			out = append(out, Group{Kind: k, Name: name})
			fill(&out[i])
		}
		out[i].Results = append(out[i].Results, r)
	}
	for _, r := range rep.Results {
		if r.Crash != nil {
			add(KindCrash, crashSite(r.Crash.Line), r, func(g *Group) {
				g.Section, g.Rule = "", "a peer on the wire must not be able to crash the host"
				g.Evidence, g.Log = "the frames of "+r.ID+" before it: "+r.Evidence, r.Crash.Log
			})
		}
		for _, f := range r.Findings {
			add(KindFinding, f.Cause, r, func(g *Group) { g.Section, g.Rule, g.Evidence = f.Section, f.Rule, f.Evidence })
		}
		switch r.Verdict {
		case conform.Fail:
			add(KindFail, r.ID, r, func(g *Group) { g.Section, g.Rule, g.Evidence = r.Section, r.Title, failEvidence(r) })
		case conform.DeviationSeen:
			add(KindKnown, r.Ref, r, func(g *Group) { g.Section, g.Rule, g.Evidence = r.Section, r.Title, failEvidence(r) })
		}
	}
	order := map[Kind]int{KindCrash: 0, KindFinding: 1, KindFail: 2, KindKnown: 3}
	sort.SliceStable(out, func(i, j int) bool { return order[out[i].Kind] < order[out[j].Kind] })
	return out
}

// failEvidence is a failed result's detail and evidence.
func failEvidence(r conform.Result) string {
	if r.Evidence == "" {
		return r.Detail
	}
	return r.Detail + " [" + r.Evidence + "]"
}

// kernelStamp is the timestamp a kernel log line starts with.
var kernelStamp = regexp.MustCompile(`^\s*\[\s*[0-9.]+\]\s*`)

// crashSite is a crash's kernel line without its timestamp: the same
// BUG in two cases is one cause.
func crashSite(line string) string { return strings.TrimSpace(kernelStamp.ReplaceAllString(line, "")) }

// CouldNotRun lists the results that could not run.
func CouldNotRun(rep *conform.Report) []conform.Result {
	var out []conform.Result
	for _, r := range rep.Results {
		if r.Verdict == conform.CouldNotRun {
			out = append(out, r)
		}
	}
	return out
}
