// Both sides' own accounts of a fault row. rnic runs with --trace, and
// its RC engine says each local ACK timeout and each NAK it acts on;
// the guest's kernel counts what rxe did (its port's hw_counters) or,
// for siw, what TCP did under it (nstat).

package main

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// rnicTraceEvents are the RC engine's trace messages (roce/completer.go)
// a fault row counts, by the name the table gives them.
var rnicTraceEvents = []struct{ name, says string }{
	{"timeouts", "local ACK timeout:"},
	{"seq_naks", "NAK PSN sequence error: responder expects"},
	{"rnr_naks", "RNR NAK psn="},
	{"implied_naks", "implied NAK"},
	{"retry_exceeded", "retry_cnt exhausted"},
}

// RnicTrace counts rnicTraceEvents in rnic's log.
func RnicTrace(log string) map[string]int {
	m := map[string]int{}
	for _, line := range strings.Split(log, "\n") {
		for _, e := range rnicTraceEvents {
			if strings.Contains(line, e.says) {
				m[e.name]++
			}
		}
	}
	return m
}

// peerCountersScript prints the guest's counters as "name value" lines:
// rxe's port counters, or, for siw (which exposes none of its own),
// the kernel's TCP counters.
func peerCountersScript(g *Guest) string {
	if g.IWARP {
		return "nstat -asz"
	}
	return `cd /sys/class/infiniband/rxe0/ports/1/hw_counters && for f in *; do echo "$f $(cat "$f")"; done`
}

// peerCounterNames are the counters a fault row reports when they
// moved: rxe's retries, sequence errors and duplicates; TCP's
// retransmissions, timeouts and damaged segments.
var peerCounterNames = map[string]bool{
	// rxe (drivers/infiniband/sw/rxe/rxe_hw_counters.c)
	"completer_retry_err": true, "retry_exceeded_err": true, "retry_rnr_exceeded_err": true,
	"rcvd_seq_err": true, "duplicate_request": true, "out_of_seq_request": true,
	"rcvd_rnr_err": true, "send_rnr_err": true, "send_err": true,
	// TCP (nstat)
	"TcpRetransSegs": true, "TcpInErrs": true, "TcpInCsumErrors": true, "TcpExtTCPTimeouts": true,
	"TcpExtTCPLostRetransmit": true, "TcpExtTCPFastRetrans": true, "TcpExtTCPSACKReorder": true,
	"TcpExtTCPDSACKRecv": true, "TcpExtTCPOFOQueue": true, "TcpExtTCPSpuriousRTOs": true,
}

// ParseCounters reads "name value ..." lines.
func ParseCounters(out string) map[string]int64 {
	m := map[string]int64{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		if v, err := strconv.ParseInt(f[1], 10, 64); err == nil {
			m[f[0]] = v
		}
	}
	return m
}

// CounterDelta is the reported counters that moved from before to after,
// "name=+N" sorted by name.
func CounterDelta(before, after map[string]int64) string {
	var s []string
	for name, v := range after {
		if d := v - before[name]; d != 0 && peerCounterNames[name] {
			s = append(s, fmt.Sprintf("%s=+%d", name, d))
		}
	}
	sort.Strings(s)
	return strings.Join(s, " ")
}

// RnicFaultReport reads the line rnic prints at the end of a run under
// --faults ("rnic0: faults SPEC: fault_tx_lost 3 retransmitted_pkts 5
// ..."): what its faults injected and what the NIC did about them; nil
// if it printed none.
func RnicFaultReport(log string) map[string]int64 {
	for _, line := range strings.Split(log, "\n") {
		_, rest, ok := strings.Cut(line, ": faults ")
		if !ok || strings.HasPrefix(rest, "on TAP ") { // the start line
			continue
		}
		if _, counts, ok := strings.Cut(rest, ": "); ok {
			return parsePairs(counts)
		}
		return map[string]int64{} // nothing moved
	}
	return nil
}

// parsePairs reads "name value name value ...".
func parsePairs(s string) map[string]int64 {
	m := map[string]int64{}
	f := strings.Fields(s)
	for i := 0; i+1 < len(f); i += 2 {
		if v, err := strconv.ParseInt(f[i+1], 10, 64); err == nil {
			m[f[i]] = v
		}
	}
	return m
}

// reportString prints a fault report sorted by name, "name=N".
func reportString(m map[string]int64) string {
	var s []string
	for k, v := range m {
		s = append(s, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(s)
	return strings.Join(s, " ")
}
