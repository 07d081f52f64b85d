// Fault rows: the same tools on a faulty wire. Linux's tc netem in the
// guest (its Debian kernel has sch_netem; this host's kernel need not)
// loses, reorders, duplicates, corrupts or rate-limits what the guest
// sends, for the length of one row. rnic must deliver every byte anyway;
// what the guest's rxe or siw does under the same faults is its own
// business, and a failure there is a finding, not a failed row
// (verdict.go).

package main

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Fault is one netem setting on a guest's egress.
type Fault struct {
	Name  string // what the row label says: "loss 1%"
	Netem string // tc's netem arguments
	// Corrupts says frames arrive damaged: bad ICRCs, bad checksums and
	// undecodable frames from the guest are then expected and counted.
	Corrupts bool
	// Bulk limits the fault to the rows that fill the wire (RC pingpong
	// and ib_write_bw): a rate limit is news only there.
	Bulk bool
	// Rnic is the same fault in rnic's --faults words, for the rows
	// where both directions are faulty ("" for none): netem on the
	// guest's egress, rnic's own injection on its TAP's (dir=tx).
	Rnic string
}

// faultSeed seeds rnic's --faults in every row, so that rnic's side of a
// row replays (netem's side does not: it has no seed).
const faultSeed = 31

// Faults are the fault rows' settings. netem reorders only what it
// delays: 25% of the frames go at once, the rest 1 ms later. rate
// shapes the guest's egress to 20 Mbit/s with netem's own queue (TCG
// guests send 64 KiB WRITEs at about 110 Mbit/s), for the bulk rows
// only.
var Faults = []*Fault{
	{Name: "loss 1%", Netem: "loss 1%"},
	{Name: "loss 5%", Netem: "loss 5%", Rnic: "loss=0.05"},
	{Name: "reorder 25%", Netem: "delay 1ms reorder 25%", Rnic: "reorder=25%,reorder-window=1ms"},
	{Name: "duplicate 1%", Netem: "duplicate 1%", Rnic: "dup=0.01"},
	{Name: "corrupt 0.1%", Netem: "corrupt 0.1%", Corrupts: true, Rnic: "corrupt=0.001"},
	{Name: "rate 20mbit", Netem: "rate 20mbit", Bulk: true},
}

// guestIface is the guest's one Ethernet interface (labinit names it).
const guestIface = "eth0"

// netemScript sets f on the guest's egress (replacing any qdisc there).
func netemScript(f *Fault) string {
	return fmt.Sprintf("modprobe sch_netem 2>/dev/null; tc qdisc replace dev %s root netem %s && tc qdisc show dev %s",
		guestIface, f.Netem, guestIface)
}

// clearNetemScript removes whatever root qdisc the guest's interface has
// (deleting the default one fails harmlessly).
const clearNetemScript = "tc qdisc del dev " + guestIface + " root 2>/dev/null; tc qdisc show dev " + guestIface

// countersMark separates a script's two parts in its output.
const countersMark = "@@counters@@"

// SetNetem reads g's counters (peerCountersScript), then puts f on its egress,
// in one command: the counters before the row (nil if the guest could
// not say).
func (l *Lab) SetNetem(ctx context.Context, g *Guest, f *Fault) (map[string]int64, error) {
	out, rc := l.Exec(ctx, g, 30, "("+peerCountersScript(g)+"); echo "+countersMark+"; "+netemScript(f))
	counters, tc, _ := strings.Cut(out, countersMark+"\n")
	if rc != 0 || !strings.Contains(tc, "netem") {
		return nil, fmt.Errorf("tc netem %s in guest %s (rc=%d): %s", f.Netem, g.Name, rc, lastLine(out))
	}
	return ParseCounters(counters), nil
}

// ClearNetem removes any netem from g's egress, then reads g's counters:
// those after the row. It runs after a row also when the run was
// interrupted, so it takes its own context.
func (l *Lab) ClearNetem(g *Guest) (map[string]int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	out, rc := l.Exec(ctx, g, 30, clearNetemScript+"; echo "+countersMark+"; ("+peerCountersScript(g)+")")
	tc, counters, _ := strings.Cut(out, countersMark+"\n")
	if rc != 0 || strings.Contains(tc, "netem") {
		return nil, fmt.Errorf("clearing netem in guest %s (rc=%d): %s", g.Name, rc, lastLine(out))
	}
	return ParseCounters(counters), nil
}

// faultRows adds, for every fault, the rows that run under it: against
// rxe, RC pingpong with --chk, ib_write_bw, ib_read_bw and rping, each
// checking its data where the tool can (pingpong --chk, rping -V);
// against siw, rping and ib_write_bw over rdma_cm. A Bulk fault has the
// pingpong and the ib_write_bw rows only. Sizes span several
// packets at path MTU 1024, so a lost packet is one in a message.
func (t *table) faultRows() {
	for _, f := range Faults {
		t.faultPairings(f)
	}
	for _, f := range Faults {
		if f.Rnic != "" {
			t.bothWays(f)
		}
	}
}

// bothWays adds the rows where the fault is on both directions: netem
// on the guest's, rnic's --faults on its own. RC pingpong --chk and
// ib_read_bw (requests one way, responses the other) against rxe,
// rping -V against siw.
func (t *table) bothWays(f *Fault) {
	prefix := func(guest string) string { return guest + " netem+rnic " + f.Name + " " }
	pp := "-g 1 -n 100 -s 4096"
	t.add(&Pairing{Name: prefix("rxe") + "rc pingpong 4096 --chk", Guest: "rxe",
		GuestServer: "ibv_rc_pingpong -d rxe0 -c " + pp, GuestClient: "ibv_rc_pingpong -d rxe0 -c " + pp + " {server}",
		RnicServer: "pingpong --chk " + pp, RnicClient: "pingpong --chk " + pp + " {server}", ListenPort: 18515})
	t.faultyBoth(f, "rxe")
	t.perf("rxe", "ib_read_bw", "read", "bw", false, "", 65536, 20)
	t.faultyBoth(f, "rxe")
	t.add(&Pairing{Name: prefix("siw") + "rping -V", Guest: "siw",
		GuestServer: "rping -s -a {self} -v -V -C 20", GuestClient: "rping -c -a {server} -v -V -C 20",
		RnicServer: "rping --iwarp -s -a {self} -C 20 -v -V", RnicClient: "rping --iwarp -c -a {server} -C 20 -v -V",
		ListenPort: rpingPort})
	t.faultyBoth(f, "siw")
}

// faultyBoth makes the pairing added last run under f both ways.
func (t *table) faultyBoth(f *Fault, guest string) {
	p := t.ps[len(t.ps)-1]
	p.Fault, p.RnicFaults = f, true
	if !strings.Contains(p.Name, "netem+rnic") {
		p.Name = guest + " netem+rnic " + f.Name + " " + strings.TrimPrefix(strings.TrimPrefix(p.Name, guest), " ")
	}
}

// rnicFaultSpec is rnic's --faults in a both-ways row.
func rnicFaultSpec(f *Fault) string { return fmt.Sprintf("%s,seed=%d", f.Rnic, faultSeed) }

// faultPairings adds one fault's pairings.
func (t *table) faultPairings(f *Fault) {
	name := func(guest, what string) string { return guest + " netem " + f.Name + " " + what }
	pp := "-g 1 -n 100 -s 4096"
	t.add(&Pairing{Name: name("rxe", "rc pingpong 4096 --chk"), Guest: "rxe", Fault: f,
		GuestServer: "ibv_rc_pingpong -d rxe0 -c " + pp, GuestClient: "ibv_rc_pingpong -d rxe0 -c " + pp + " {server}",
		RnicServer: "pingpong --chk " + pp, RnicClient: "pingpong --chk " + pp + " {server}", ListenPort: 18515})
	tools := perfTools[:2] // ib_write_bw, ib_read_bw
	if f.Bulk {
		tools = perfTools[:1]
	}
	for _, p := range tools {
		t.perf("rxe", p.tool, p.op, p.mode, false, "", 65536, 20)
		t.faulty(f, "rxe netem "+f.Name+" ")
	}
	rping := func(guest, iwarp string, port, cmPort int) {
		t.add(&Pairing{Name: name(guest, "rping -V"), Guest: guest, Fault: f,
			GuestServer: "rping -s -a {self} -v -V -C 20", GuestClient: "rping -c -a {server} -v -V -C 20",
			RnicServer: "rping" + iwarp + " -s -a {self} -C 20 -v -V", RnicClient: "rping" + iwarp + " -c -a {server} -C 20 -v -V",
			ListenPort: port, CMPort: cmPort})
	}
	if !f.Bulk {
		rping("rxe", "", 0, rpingPort)
		rping("siw", " --iwarp", rpingPort, 0)
	}
	t.perf("siw", "ib_write_bw", "write", "bw", true, "", 65536, 20)
	t.faulty(f, "siw netem "+f.Name+" ")
}

// faulty makes the pairing added last run under f, its name prefixed.
func (t *table) faulty(f *Fault, prefix string) {
	p := t.ps[len(t.ps)-1]
	p.Fault = f
	p.Name = prefix + strings.TrimPrefix(strings.TrimPrefix(p.Name, p.Guest), " ")
}
