package roce

import (
	"bytes"
	"testing"
	"time"

	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce/wire"
	"github.com/rnic/rnic/transport"
)

// The local ACK timer bounds the time without progress, not the time of a
// whole message (IBTA §9.7.6.1.3; rxe's completer restarts it after every
// response it processes). These READs stream for many timeouts on a slow
// link while each response arrives well within one.

// slowReadOpts is a link of 100 Mb/s and a timeout of 4.096 µs × 2^6 =
// 262 µs: a 1 KiB response occupies the wire for about 85 µs, the 1 MiB
// READ below for about 87 ms, some 330 timeouts.
func slowReadOpts() qpOpts {
	o := defaultOpts()
	o.bandwidth = 100e6
	o.timeout = 6
	o.retryCnt = 3
	return o
}

func postBigRead(t *testing.T, h *harness) {
	t.Helper()
	a, b := h.a, h.b
	fill(b.buf, 31)
	a.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRRDMARead, SGL: []verbs.SGE{a.sge(0, bufSize)}, RemoteAddr: b.va(0), RKey: b.mr.RKey()})
	h.run()
	wantWC(t, a.scq.take(), verbs.WC{WRID: 1, Opcode: verbs.WCRDMARead, ByteLen: bufSize})
	if !bytes.Equal(a.buf, b.buf) {
		t.Fatal("data differs")
	}
}

// A READ whose responses take far longer than the timeout in total, each
// arriving within it: no timeout fires, nothing is retried.
func TestLongReadRestartsTimer(t *testing.T) {
	h := newHarness(t, slowReadOpts())
	postBigRead(t, h)
	if n := h.a.stack.ctr.Get(RetransmitTimeouts); n != 0 {
		t.Fatalf("%d local ACK timeouts during a READ that kept making progress", n)
	}
	if n := h.b.stack.ctr.Get(ReadResponsesSent); n != bufSize/1024 {
		t.Fatalf("%d read responses sent, want %d (no replay)", n, bufSize/1024)
	}
}

// The same READ with one response lost early: the requester asks again
// from the lost PSN (implied NAK) at once. The responder answers that only
// after the rest of the stream it is sending, as rxe's responder does; the
// responses of that old stream, which the requester ignores while the lost
// one is missing, show that the responder is alive and busy with our
// requests, so they keep the timer from firing. Before, every timeout
// behind the old stream asked for yet another replay until RETRY_EXC_ERR.
func TestLongReadRecoversFromLoss(t *testing.T) {
	const lost = 20
	o := slowReadOpts()
	o.faults.Script = dropWhere(transport.BtoA, 1, func(op wire.Opcode, psn uint32) bool {
		return op == wire.RCReadResponseMiddle && psn == 1000+lost
	})
	h := newHarness(t, o)
	postBigRead(t, h)
	if n := h.a.stack.ctr.Get(RetransmitTimeouts); n != 0 {
		t.Fatalf("%d local ACK timeouts", n)
	}
	if n := h.a.stack.ctr.Get(ImpliedNak); n != 1 {
		t.Fatalf("%d implied NAKs, want 1", n)
	}
	const npkts = bufSize / 1024
	if n := h.b.stack.ctr.Get(ReadResponsesSent); n != npkts+npkts-lost {
		t.Fatalf("%d read responses sent, want the stream and one replay from the lost one: %d", n, npkts+npkts-lost)
	}
}

// A peer that answers a READ with the same response over and over (never
// the rest) keeps the timer alive only for a bounded number of responses:
// the READ still ends in RETRY_EXC_ERR.
func TestRepeatedResponsesStillTimeOut(t *testing.T) {
	var first []byte
	o := defaultOpts()
	o.retryCnt = 1
	o.faults.Script = func(d transport.Direction, _ int, frame []byte) transport.Verdict {
		if op, _, ok := opcodeOf(frame); ok && d == transport.BtoA {
			if op == wire.RCReadResponseFirst && first == nil {
				first = bytes.Clone(frame)
			}
			return transport.Drop()
		}
		return transport.Pass()
	}
	h := newHarness(t, o)
	a, b := h.a, h.b
	a.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRRDMARead, SGL: []verbs.SGE{a.sge(0, 8192)}, RemoteAddr: b.va(0), RKey: b.mr.RKey()})
	h.clk.RunFor(time.Millisecond)
	if first == nil {
		t.Fatal("no READ response seen")
	}
	a.stack.Input(first) // the real one: progress
	timeout := ackTimeout(o.timeout)
	for i := 0; i < 100000 && len(a.scq.wcs) == 0; i++ {
		a.stack.Input(first) // a duplicate: no progress
		h.clk.RunFor(timeout / 4)
	}
	wantWC(t, a.scq.take(), verbs.WC{WRID: 1, Status: verbs.WCRetryExcErr})
}

// A duplicate READ that arrives while the responder is still streaming the
// original's responses makes it give up the rest of that stream and start
// again from the PSN asked for: the requester went back N and discards
// everything after that PSN anyway. Before, the duplicate waited until the
// whole stream had been sent and then got a whole second copy.
func TestDuplicateReadRestartsStream(t *testing.T) {
	var req []byte
	o := defaultOpts()
	o.faults.Script = func(d transport.Direction, _ int, frame []byte) transport.Verdict {
		if op, _, ok := opcodeOf(frame); ok && op == wire.RCReadRequest && req == nil {
			req = bytes.Clone(frame)
		}
		return transport.Pass()
	}
	h := newHarness(t, o)
	a, b := h.a, h.b
	const n = 512 << 10
	fill(b.buf[:n], 3)
	a.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRRDMARead, SGL: []verbs.SGE{a.sge(0, n)}, RemoteAddr: b.va(0), RKey: b.mr.RKey()})
	for b.stack.ctr.Get(ReadResponsesSent) == 0 {
		if !h.clk.Step() {
			t.Fatal("the READ never reached the responder")
		}
	}
	if got := b.stack.ctr.Get(ReadResponsesSent); got != readBurst {
		t.Fatalf("%d responses in the first burst, want %d", got, readBurst)
	}
	b.stack.Input(req) // the same READ again: a duplicate
	h.run()
	wantWC(t, a.scq.take(), verbs.WC{WRID: 1, Opcode: verbs.WCRDMARead, ByteLen: n})
	if !bytes.Equal(a.buf[:n], b.buf[:n]) {
		t.Fatal("data differs")
	}
	if got, want := b.stack.ctr.Get(ReadResponsesSent), uint64(readBurst+n/1024); got != want {
		t.Fatalf("%d read responses sent, want %d: the first burst, then the whole READ once", got, want)
	}
}
