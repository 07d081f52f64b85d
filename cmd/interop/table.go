// The result table: one line per row, aligned columns, the way the lead
// pastes it into the issue note.

package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Result is what one row gave.
type Result struct {
	Row     Row
	Pass    bool
	Reason  string // short; why it failed, or a note on a pass
	Packets int    // frames on rnic's TAP (-1: no capture)
	Retrans int    // retransmissions (-1: not counted)
	Seconds float64
	// Finding, on a row that did not pass, says the guest's rxe or siw
	// failed where rnic did not (verdict.go): not a failed row.
	Finding string

	// A fault row's accounts (faults.go): its capture by sender, the
	// damaged guest frames tshark objected to, rnic's trace counts and
	// the guest's counters that moved.
	Wire         *WireStats
	PeerFindings int
	RnicTrace    map[string]int
	PeerDelta    string
	// RnicReport is rnic's own account under --faults (both-ways rows):
	// what its faults injected, its retransmissions and timeouts.
	RnicReport map[string]int64

	note                string // a pass's note, as a side said it
	rnicSide, guestSide sideRC
}

// Verdict is the row's verdict: PASS, FINDING or FAIL.
func (r Result) Verdict() string {
	switch {
	case r.Pass:
		return "PASS"
	case r.Finding != "":
		return "FINDING"
	default:
		return "FAIL"
	}
}

// Failed says the row counts as failed (a finding does not).
func (r Result) Failed() bool { return !r.Pass && r.Finding == "" }

// WriteTable prints results as a table with a totals line, then the
// fault rows' accounts if there were any.
func WriteTable(w io.Writer, results []Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "pairing\trole\tresult\tpackets\tretrans\tsecs")
	pass, findings := 0, 0
	for _, r := range results {
		res := r.Verdict()
		switch {
		case r.Pass:
			pass++
		case r.Finding != "":
			findings++
		}
		if why := r.shortReason(); why != "" {
			res += " (" + oneLine(why, 70) + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.0f\n", r.Row.Name, r.Row.Role, res, count(r.Packets), count(r.Retrans), r.Seconds)
	}
	tw.Flush()
	fmt.Fprintf(w, "%d/%d rows passed", pass, len(results))
	if findings > 0 {
		fmt.Fprintf(w, ", %d findings (the guest failed, not rnic)", findings)
	}
	fmt.Fprintln(w)
	writeFaultTable(w, results)
}

// shortReason is what the table says after the verdict.
func (r Result) shortReason() string {
	if r.Finding != "" {
		return r.Finding
	}
	return r.Reason
}

// writeFaultTable prints the fault rows' accounts: each side's frames,
// retransmissions, NAKs and bad frames from the capture (F/R/N/B),
// rnic's timeouts from its trace, and the guest's counters that moved.
func writeFaultTable(w io.Writer, results []Result) {
	var rows []Result
	for _, r := range results {
		if r.Row.Fault != nil {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w, "\nfault rows: capture by sender as frames/retrans/NAKs/bad; rnic's trace; the guest's counters")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "pairing\trole\tverdict\trnic F/R/N/B\tguest F/R/N/B\trnic timeouts\trnic trace\tguest counters\tsecs")
	for _, r := range rows {
		rnic, guest := "-", "-"
		if r.Wire != nil {
			rnic, guest = r.Wire.Rnic.String(), r.Wire.Peer.String()
		}
		timeouts := "-"
		if r.RnicTrace != nil {
			timeouts = fmt.Sprint(r.RnicTrace["timeouts"])
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.0f\n", r.Row.Name, r.Row.Role, r.Verdict(), rnic, guest,
			timeouts, traceString(r.RnicTrace), orDash(r.PeerDelta), r.Seconds)
	}
	tw.Flush()
	for _, r := range rows {
		if r.RnicReport != nil {
			fmt.Fprintf(w, "%s / %s: rnic's faults and counters: %s\n", r.Row.Name, r.Row.Role, orDash(reportString(r.RnicReport)))
		}
	}
}

// traceString prints rnic's trace counts but the timeouts, "name=N".
func traceString(m map[string]int) string {
	var s []string
	for _, e := range rnicTraceEvents[1:] {
		if m[e.name] > 0 {
			s = append(s, fmt.Sprintf("%s=%d", e.name, m[e.name]))
		}
	}
	return orDash(strings.Join(s, " "))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// count prints a count, "-" for an unknown one.
func count(n int) string {
	if n < 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

// oneLine squeezes s to one line of at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
