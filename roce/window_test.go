package roce

import (
	"testing"
	"time"

	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce/wire"
	"github.com/rnic/rnic/transport"
)

// TestCongestionWindow: a new QP starts with the stack's Window, halves
// it on a resend, restarts at one packet after a timeout, doubles per
// window acknowledged below ssthresh and grows by one per window above
// it, and is back at the stack's Window once it reaches it.
func TestCongestionWindow(t *testing.T) {
	s := &Stack{cfg: Config{Window: 128}}
	qp := &QP{s: s}
	r := &qp.req
	r.qp = qp
	want := func(what string, w int) {
		t.Helper()
		if got := r.window(); got != w {
			t.Fatalf("%s: window %d, want %d", what, got, w)
		}
	}
	r.setPSN(0)
	want("start", 128)
	r.lossWindow()
	want("a resend", 64)
	r.timeoutWindow()
	want("a timeout", 1)
	for _, w := range []int{2, 4, 8, 16, 32, 64} {
		r.growWindow(r.window())
		want("slow start back to ssthresh", w)
	}
	r.growWindow(63)
	want("63 of a window of 64 above ssthresh", 64)
	r.growWindow(1)
	want("a whole window above ssthresh", 65)
	for i := 0; i < 64; i++ {
		r.growWindow(r.window())
	}
	want("63 more windows above ssthresh", 128)
	r.lossWindow()
	r.lossWindow()
	want("two resends", 32)
}

// TestLateAckOvertakesResend: four SENDs go out, their ACKs are delayed
// past the local ACK timeout, so the requester resends the first (its
// window now one packet); the late ACK then acknowledges all four. The
// requester must go on after them, not send the acknowledged (and
// retired) three again, which it did once its resend was window-limited.
func TestLateAckOvertakesResend(t *testing.T) {
	delayed := 0
	h := newHarness(t, withScript(func(d transport.Direction, _ int, frame []byte) transport.Verdict {
		if op, _, ok := opcodeOf(frame); ok && d == transport.BtoA && op == wire.RCAck && delayed < 4 {
			delayed++
			return transport.Delay(100 * time.Millisecond) // the local ACK timeout is 67 ms
		}
		return transport.Pass()
	}))
	a, b := h.a, h.b
	for i := range 4 {
		b.recv(uint64(i), i*100, 100)
	}
	for i := range 4 {
		a.post(t, verbs.SendWR{ID: uint64(i), Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGL: []verbs.SGE{a.sge(0, 10)}})
	}
	h.run()
	wcs := a.scq.take()
	if len(wcs) != 4 {
		t.Fatalf("%d send completions, want 4: %v", len(wcs), wcs)
	}
	for i, wc := range wcs {
		if wc.WRID != uint64(i) || wc.Status != verbs.WCSuccess {
			t.Fatalf("completion %d: %+v", i, wc)
		}
	}
	if got := a.stack.ctr.Get(RetransmitTimeouts); got != 1 {
		t.Fatalf("%d local ACK timeouts, want 1", got)
	}
	if got := b.stack.ctr.Get(DuplicateRequest); got != 1 {
		t.Errorf("%d duplicate requests at the responder, want 1 (the resend of the first SEND)", got)
	}
	if a.qp.State() != verbs.QPSRTS {
		t.Fatalf("requester in %v", a.qp.State())
	}
}
