package ladder

import (
	"fmt"
	"net/netip"
)

type qpEnd struct {
	host string
	qp   int
}

type psnEnd struct {
	src, dst string
	psn      int64
}

// pairQPs finds the source QP of RoCE frames that do not carry it (all but
// UD): an ACK or response from B to QP a at A, with the PSN of a request
// from A to QP b at B, pairs a with b. Then every frame from a to B's host
// comes from a, and every frame from b to A's host from b.
func pairQPs(evs []Event) {
	reqs := map[psnEnd]int{}
	for i := range evs {
		e := &evs[i]
		if e.psn < 0 {
			continue
		}
		if e.Class == ClassRequest {
			reqs[psnEnd{e.SrcHost, e.DstHost, e.psn}] = e.DstQP
		}
	}
	partner := map[qpEnd]int{}
	for i := range evs {
		e := &evs[i]
		if e.psn < 0 || e.Class == ClassRequest || e.Class == ClassSetup {
			continue
		}
		if b, ok := reqs[psnEnd{e.DstHost, e.SrcHost, e.psn}]; ok {
			// e goes from b (at SrcHost) to DstQP (at DstHost).
			if _, seen := partner[qpEnd{e.SrcHost, b}]; !seen {
				partner[qpEnd{e.SrcHost, b}] = e.DstQP
				partner[qpEnd{e.DstHost, e.DstQP}] = b
			}
		}
	}
	for i := range evs {
		e := &evs[i]
		if e.psn >= 0 && e.SrcQP < 0 {
			if a, ok := partner[qpEnd{e.DstHost, e.DstQP}]; ok {
				e.SrcQP = a
			}
		}
	}
}

// laneNames gives an event's source and destination lanes.
func laneNames(e *Event, byQP bool) (src, dst string) {
	if !byQP {
		return e.SrcHost, e.DstHost
	}
	switch {
	case e.psn >= 0:
		return qpLane(e.SrcHost, e.SrcQP), qpLane(e.DstHost, e.DstQP)
	case e.Src.Port() != 0 && e.Dst.Port() != 0:
		return endpoint(e.Src), endpoint(e.Dst)
	}
	return e.SrcHost, e.DstHost
}

func qpLane(host string, qp int) string {
	if qp < 0 {
		return host + " qp ?"
	}
	return fmt.Sprintf("%s qp 0x%06x", host, qp)
}

func endpoint(a netip.AddrPort) string { return a.String() }

// selectEvents applies --from/--to and --qp.
func selectEvents(evs []Event, o Options) []Event {
	var out []Event
	for _, e := range evs {
		if e.Mark {
			if o.FromTime > 0 && e.Time < o.FromTime || o.ToTime > 0 && e.Time > o.ToTime || o.QP > 0 && e.DstQP != o.QP {
				continue
			}
			out = append(out, e)
			continue
		}
		if o.From > 0 && e.Frame < o.From || o.To > 0 && e.Frame > o.To {
			continue
		}
		if o.FromTime > 0 && e.Time < o.FromTime || o.ToTime > 0 && e.Time > o.ToTime {
			continue
		}
		if o.QP > 0 && e.SrcQP != o.QP && e.DstQP != o.QP {
			continue
		}
		out = append(out, e)
	}
	return out
}
