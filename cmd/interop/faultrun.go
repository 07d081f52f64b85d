// Running one fault row: netem on the guest's egress, the row as any
// other, netem off again (also when the row failed or the run was
// interrupted), then both sides' accounts and the capture checks.

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// runFault runs a fault row; Run has readied its capture and TAP.
func (rn *Runner) runFault(ctx context.Context, row Row, g *Guest, base, pcap string, start time.Time) Result {
	before, err := rn.Lab.SetNetem(ctx, g, row.Fault)
	if err != nil {
		rn.clearNetem(g)
		return Result{Row: row, Packets: -1, Retrans: -1, Reason: err.Error(), Seconds: time.Since(start).Seconds()}
	}
	res, why, _ := rn.runSides(ctx, row, g, base, pcap)
	after, err := rn.clearNetem(g)
	if err != nil {
		why = append(why, err.Error())
	}
	if len(before) > 0 && len(after) > 0 {
		res.PeerDelta = CounterDelta(before, after)
	}
	if b, err := os.ReadFile(base + ".rnic.log"); err == nil {
		res.RnicTrace = RnicTrace(string(b))
		res.RnicReport = RnicFaultReport(string(b))
	}
	checks := rn.checkFault(ctx, row, g, pcap, &res)
	why = append(why, checks...)
	res.Pass = len(why) == 0
	res.Reason = strings.Join(why, "; ")
	if res.Pass {
		res.Reason = res.note
	} else if len(checks) == 0 {
		res.Finding = knownFinding(row, res)
	}
	res.Seconds = time.Since(start).Seconds()
	return res
}

// clearNetem takes netem off g, saying so on the log if it cannot: a
// guest left lossy would fail the rows after.
func (rn *Runner) clearNetem(g *Guest) (map[string]int64, error) {
	counters, err := rn.Lab.ClearNetem(g)
	if err != nil {
		fmt.Fprintf(rn.Lab.Log, "interop: %v\n", err)
	}
	return counters, err
}

// ClearAllNetem takes netem off every guest of the run before the rows
// start: a guest kept (--keep) from a run that was killed may still
// have it.
func (rn *Runner) ClearAllNetem(gs []*Guest) {
	for _, g := range gs {
		rn.clearNetem(g)
	}
}

// runOut runs a command and returns its combined output.
func runOut(ctx context.Context, name string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return string(out), err
}
