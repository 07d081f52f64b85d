// The tester as the DUT's peer in the requester, UC/UD and rdma_cm cases:
// sending what rocepeer builds, taking the DUT's requests one by one,
// counting transmissions, and the Breaks those cases share.

package conform

import (
	"fmt"
	"time"

	"github.com/rnic/rnic/cmd/internal/conform/rocepeer"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce/wire"
)

// responder is the run's RC responder state (the tester answering the
// DUT's requests), created on first use.
func peerResponder(r *Run) *rocepeer.Responder {
	if p, ok := r.Vars["peer.responder"].(*rocepeer.Responder); ok {
		return p
	}
	p := &rocepeer.Responder{DestQP: r.QP.QPN, Credit: wire.CreditsUnlimited}
	r.Vars["peer.responder"] = p
	return p
}

// sendPeer sends packets to the DUT and returns when the last one left.
func sendPeer(r *Run, ps ...rocepeer.Packet) (time.Time, error) {
	e := r.Port.Encap(r.DUTAddr)
	var at time.Time
	for _, p := range ps {
		b := wire.AppendFrame(nil, &e, &p.H, p.Payload)
		at = r.Port.Now()
		no, err := r.Port.Send(b)
		if err != nil {
			return at, err
		}
		r.Sent = no
		r.Note("#%d→%s", no, describePacket(r, &p.H))
	}
	return at, nil
}

// describePacket names a packet the tester sends, PSNs relative to the
// DUT's first request PSN when the DUT is the requester.
func describePacket(r *Run, h *wire.Headers) string {
	base := r.DUTPSN(0)
	if h.BTH.Opcode.Transport() != wire.TransportRC || !h.BTH.Opcode.Info().Response {
		base = r.PSN(0)
	}
	s := fmt.Sprintf("%v psn%+d", h.BTH.Opcode, wire.PSNDiff(h.BTH.PSN, base))
	if h.BTH.Opcode.Info().Has(wire.HdrAETH) {
		s += " " + h.AETH.Syndrome.String()
	}
	return s
}

// describeRequest names a DUT request in evidence.
func describeRequest(r *Run, f *Frame) string {
	if f.Err != nil {
		return fmt.Sprintf("#%d←undecodable (%v)", f.No, f.Err)
	}
	return fmt.Sprintf("#%d←%v psn%+d", f.No, f.Op(), wire.PSNDiff(f.H.BTH.PSN, r.DUTPSN(0)))
}

// nextBy waits for the DUT's next frame until the port's clock has moved
// d on: the DUT's own time on a simulated link (whose pacing may lag the
// wall clock on a busy machine), the wall clock otherwise. A wall-clock
// cap of 4d + 2 s still ends the wait if the link's clock stalls.
func nextBy(r *Run, d time.Duration) (Frame, bool) {
	start, wall := r.Port.Now(), time.Now()
	for {
		left := d - r.Port.Now().Sub(start)
		if left <= 0 || time.Since(wall) > 4*d+2*time.Second {
			return r.next(0)
		}
		if f, ok := r.next(min(left, 20*time.Millisecond)); ok {
			return f, true
		}
	}
}

// dutRequest takes the DUT's next frame, which must come within d (scaled)
// and be a well-formed frame for the tester's QP.
func dutRequest(r *Run, what string, d time.Duration) (Frame, error) {
	f, ok := nextBy(r, r.Bound(d))
	if !ok {
		return f, fmt.Errorf("no %s from the DUT within %v", what, r.Bound(d))
	}
	r.Note("%s", describeRequest(r, &f))
	return f, wellFormed(r, &f)
}

// requestAt takes the DUT's next frame and wants it to be packet rel of
// its requests with one of the opcodes.
func dutRequestAt(r *Run, what string, d time.Duration, rel int, ops ...wire.Opcode) (Frame, error) {
	f, err := dutRequest(r, what, d)
	if err != nil {
		return f, err
	}
	return f, isDUTRequest(r, &f, rel, ops...)
}

func isDUTRequest(r *Run, f *Frame, rel int, ops ...wire.Opcode) error {
	if got, want := f.H.BTH.PSN, r.DUTPSN(rel); got != want {
		return fmt.Errorf("frame %d: %v at psn%+d, want psn%+d", f.No, f.Op(), wire.PSNDiff(got, r.DUTPSN(0)), rel)
	}
	for _, o := range ops {
		if f.Op() == o {
			return nil
		}
	}
	return fmt.Errorf("frame %d: %v, want %v", f.No, f.Op(), ops)
}

// transmissions counts the DUT's transmissions of its request at rel,
// until the DUT stays silent for quiet (scaled); frames of the next span
// requests (sent along, go-back-N) are allowed and not counted. reply runs
// after each frame. More than limit transmissions is an error (a DUT that
// retries forever).
func dutTransmissions(r *Run, rel, span int, quiet time.Duration, limit int, reply func(f *Frame) error) (int, error) {
	n := 0
	for {
		f, ok := nextBy(r, r.Bound(quiet))
		if !ok {
			r.Note("%d transmissions of psn%+d, then none for %v", n, rel, r.Bound(quiet).Round(time.Millisecond))
			return n, nil
		}
		if err := wellFormed(r, &f); err != nil {
			return n, err
		}
		d := int(wire.PSNDiff(f.H.BTH.PSN, r.DUTPSN(rel)))
		if d < 0 || d > span {
			return n, fmt.Errorf("frame %d: %v at psn%+d, want psn%+d..%+d", f.No, f.Op(),
				wire.PSNDiff(f.H.BTH.PSN, r.DUTPSN(0)), rel, rel+span)
		}
		if d == 0 {
			n++
			r.Note("%s", describeRequest(r, &f))
		}
		if n > limit {
			return n, fmt.Errorf("more than %d transmissions of psn%+d: the DUT does not give up", limit, rel)
		}
		if reply != nil {
			if err := reply(&f); err != nil {
				return n, err
			}
		}
	}
}

// skipBefore takes the DUT's frames captured before frame no (the tester's
// answer) that are already there or come within quiet (scaled): the DUT
// sent them before it could have seen the answer (a retransmission whose
// timer fired while a slow tester was still answering is no fault). The
// first later frame is kept for the next step.
func skipBefore(r *Run, no int, quiet time.Duration) {
	for {
		f, ok := nextBy(r, r.Bound(quiet))
		if !ok {
			return
		}
		if f.No > no {
			r.pending = append([]Frame{f}, r.pending...)
			return
		}
		r.Note("#%d, sent before #%d reached the DUT", f.No, no)
	}
}

// wrSend is a signaled SEND of n bytes from DefaultMR at off.
func wrSend(id uint64, off uint64, n uint32) WR {
	return WR{ID: id, Op: verbs.WRSend, Local: []Seg{{MR: DefaultMR, Off: off, Len: n}}}
}

// ok wants a successful completion of wr_id id.
func wcOK(id uint64) WCWant { return WCWant{Status: verbs.WCSuccess, ID: Is(id)} }

// failed wants a completion of wr_id id with status st.
func wcFailed(id uint64, st verbs.WCStatus) WCWant { return WCWant{Status: st, ID: Is(id)} }

// repeatsBreak is the Break of a requester that never sends a PSN twice.
func repeatsBreak() *Break {
	return &Break{Name: "never retransmits a request",
		Fresh: OutFresh(func() FrameFault { return (&rocepeer.Repeats{}).Fault })}
}

// inBreak is a Break that rewrites matching frames arriving at the DUT.
func inBreak(name string, match func(p *wire.Packet) bool, edit func(f *wire.Frame)) *Break {
	return &Break{Name: name, In: rocepeer.Rewrite(match, edit)}
}

// outBreak is a Break that rewrites matching frames the DUT sends.
func outBreak(name string, match func(p *wire.Packet) bool, edit func(f *wire.Frame)) *Break {
	return &Break{Name: name, Out: rocepeer.Rewrite(match, edit)}
}

// shiftPSN moves a frame's BTH PSN by d.
func shiftPSN(d int) func(f *wire.Frame) {
	return func(f *wire.Frame) {
		b := f.Packet.BTH()
		b.SetPSN(wire.PSNAdd(b.PSN(), d))
	}
}
