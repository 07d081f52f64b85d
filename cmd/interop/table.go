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
}

// WriteTable prints results as a table with a totals line.
func WriteTable(w io.Writer, results []Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "pairing\trole\tresult\tpackets\tretrans\tsecs")
	pass := 0
	for _, r := range results {
		res := "FAIL"
		if r.Pass {
			res = "PASS"
			pass++
		}
		if r.Reason != "" {
			res += " (" + oneLine(r.Reason, 70) + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.0f\n", r.Row.Name, r.Row.Role, res, count(r.Packets), count(r.Retrans), r.Seconds)
	}
	tw.Flush()
	fmt.Fprintf(w, "%d/%d rows passed\n", pass, len(results))
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
