package roce

import (
	"testing"

	"github.com/rnic/rnic/nic/verbs"
)

// TestSendCQOverflowGoesOn: a send completion that finds its CQ full is
// lost and counted, and the QP goes on, as on Linux rxe: the next WRITE
// lands and completes once the application has polled room.
func TestSendCQOverflowGoesOn(t *testing.T) {
	h := newHarness(t, defaultOpts())
	a, b := h.a, h.b
	a.scq.limit = 1
	fill(a.buf[:64], 3)
	for i := range 3 {
		a.post(t, verbs.SendWR{ID: uint64(i + 1), Opcode: verbs.WRRDMAWrite, SGL: []verbs.SGE{a.sge(0, 64)},
			RemoteAddr: b.va(0), RKey: b.mr.RKey()})
	}
	h.run()
	wantWC(t, a.scq.take(), verbs.WC{WRID: 1, Status: verbs.WCSuccess, Opcode: verbs.WCRDMAWrite})
	if got := a.stack.Counters().Get(CQOverflow); got != 2 {
		t.Errorf("cq_overflow %d, want 2 (two completions lost)", got)
	}
	if a.qp.CurState != verbs.QPSRTS {
		t.Fatalf("QP %v after a lost send completion, want RTS", a.qp.CurState)
	}
	fill(a.buf[64:128], 9)
	a.post(t, verbs.SendWR{ID: 4, Opcode: verbs.WRRDMAWrite, SGL: []verbs.SGE{a.sge(64, 64)},
		RemoteAddr: b.va(64), RKey: b.mr.RKey()})
	h.run()
	wantWC(t, a.scq.take(), verbs.WC{WRID: 4, Status: verbs.WCSuccess, Opcode: verbs.WCRDMAWrite})
	if string(b.buf[64:128]) != string(a.buf[64:128]) {
		t.Error("the WRITE after the overflow did not land")
	}
}

// TestRecvCQOverflowFailsQP: a receive completion that finds its CQ full
// is lost and the responder's QP goes to ERR, as rxe's class G.
func TestRecvCQOverflowFailsQP(t *testing.T) {
	h := newHarness(t, defaultOpts())
	a, b := h.a, h.b
	b.rcq.limit = 1
	b.recv(1, 0, 64)
	b.recv(2, 64, 64)
	for i := range 2 {
		a.post(t, verbs.SendWR{ID: uint64(i + 1), Opcode: verbs.WRSend, SGL: []verbs.SGE{a.sge(0, 8)}})
	}
	h.run()
	if got := b.stack.Counters().Get(CQOverflow); got != 1 {
		t.Errorf("cq_overflow %d, want 1", got)
	}
	if b.qp.CurState != verbs.QPSErr {
		t.Errorf("responder QP %v after a lost receive completion, want ERR", b.qp.CurState)
	}
}
