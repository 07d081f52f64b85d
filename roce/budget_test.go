package roce

import (
	"bytes"
	"testing"
	"time"

	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce/wire"
	"github.com/rnic/rnic/transport"
)

// budgetPair is one more connected QP pair on a harness's two stacks,
// with completion queues of its own.
type budgetPair struct {
	a, b     *QP
	scq, rcq *testCQ
}

// addPair creates and connects QP pair i (A's QPN 0x200+i, B's 0x1200+i).
func (h *harness) addPair(i int, o qpOpts) *budgetPair {
	h.t.Helper()
	p := &budgetPair{scq: &testCQ{}, rcq: &testCQ{}}
	mk := func(n *node, qpn uint32, cq *testCQ) *QP {
		eng, err := n.stack.CreateQP(&verbs.QPConfig{
			Type: verbs.QPTypeRC, QPN: qpn, PD: 1, Memory: n.mem, PortMTU: verbs.MTU1024,
			SendCQ: cq, RecvCQ: p.rcq, RQ: &testRQ{},
			Cap: verbs.QPCap{MaxSendWR: o.sqDepth, MaxRecvWR: 16, MaxSendSGE: 1, MaxRecvSGE: 1},
		})
		if err != nil {
			h.t.Fatal(err)
		}
		return eng.(*QP)
	}
	p.a, p.b = mk(h.a, 0x200+uint32(i), p.scq), mk(h.b, 0x1200+uint32(i), &testCQ{})
	na, nb := *h.a, *h.b
	na.qp, nb.qp = p.a, p.b
	h.connect(&na, &nb, o)
	h.connect(&nb, &na, o)
	return p
}

// outstanding is the bytes A's requesters keep unacknowledged, a path MTU
// per PSN, as the budget counts them.
func outstanding(pairs []*budgetPair) int64 {
	var n int64
	for _, p := range pairs {
		n += int64(wire.PSNDiff(p.a.req.maxSent, p.a.req.unacked)) * int64(p.a.mtu)
	}
	return n
}

// TestBudgetSharedByQPs: 32 QPs with four 8 KiB WRITEs each (512 KiB in
// flight if each used its window) over a slow link that loses 1% of the
// frames, with a stack budget of 64 KiB. After every event the bytes the
// QPs keep unacknowledged together stay within the budget (without the
// budget they reach 512 KiB at once), every QP completes all its WRITEs
// intact, each QP's first completion comes before the last completion of
// any QP (they take turns, none starves), and at the end no budget is
// held.
func TestBudgetSharedByQPs(t *testing.T) {
	const qps, wrs, size, limit = 32, 4, 8 << 10, 64 << 10
	o := defaultOpts()
	o.budget = limit
	o.bandwidth = 1e9
	o.faults = transport.Symmetric(transport.Faults{Loss: 0.01})
	o.seed = 7
	h := newHarness(t, o)
	fill(h.a.buf, 3)
	pairs := make([]*budgetPair, qps)
	for i := range pairs {
		pairs[i] = h.addPair(i, o)
	}
	for i, p := range pairs {
		for j := range wrs {
			off := (i*wrs + j) * size
			wr := verbs.SendWR{ID: uint64(j), Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
				SGL: []verbs.SGE{h.a.sge(off, size)}, RemoteAddr: h.b.va(off), RKey: h.b.mr.RKey()}
			if err := p.a.PostSend(&wr); err != nil {
				t.Fatal(err)
			}
		}
	}
	var peak int64
	firstDone, lastDone := make([]time.Duration, qps), time.Duration(0)
	limitAt := h.clk.Now() + time.Minute
	for h.clk.Now() < limitAt && h.clk.Step() {
		if n := outstanding(pairs); n > peak {
			peak = n
		}
		if _, used := h.a.stack.BudgetUse(); used > limit {
			t.Fatalf("%d bytes of budget in use, budget %d", used, limit)
		}
		for i, p := range pairs {
			if firstDone[i] == 0 && len(p.scq.wcs) > 0 {
				firstDone[i] = h.clk.Now()
			}
			if len(p.scq.wcs) == wrs && h.clk.Now() > lastDone {
				lastDone = h.clk.Now()
			}
		}
	}
	if peak > limit {
		t.Errorf("%d bytes unacknowledged at the peak, budget %d", peak, limit)
	}
	for i, p := range pairs {
		wcs := p.scq.take()
		if len(wcs) != wrs {
			t.Fatalf("QP %d: %d completions, want %d: %v", i, len(wcs), wrs, wcs)
		}
		for _, wc := range wcs {
			if wc.Status != verbs.WCSuccess {
				t.Fatalf("QP %d: %+v", i, wc)
			}
		}
	}
	var latestFirst time.Duration
	for _, d := range firstDone {
		latestFirst = max(latestFirst, d)
	}
	if latestFirst > lastDone {
		t.Errorf("a QP completed its first WRITE at %v, after others completed all theirs (%v)", latestFirst, lastDone)
	}
	if !bytes.Equal(h.a.buf[:qps*wrs*size], h.b.buf[:qps*wrs*size]) {
		t.Error("written data differs")
	}
	if _, used := h.a.stack.BudgetUse(); used != 0 {
		t.Errorf("%d bytes of budget still in use after every WRITE completed", used)
	}
	if h.a.stack.ctr.Get(BudgetWaits) == 0 {
		t.Error("no QP waited for budget")
	}
	t.Logf("peak %d bytes unacknowledged; %d waits; %d retransmitted packets; done at %v",
		peak, h.a.stack.ctr.Get(BudgetWaits), h.a.stack.ctr.Get(RetransmittedPkts), lastDone)
}

// TestBudgetReturnsOnFlushAndDestroy: a QP whose peer is gone (its
// packets are never answered) holds the whole budget; another QP's WRITE
// waits for it, and goes on as soon as the holder is moved to ERR (the
// flush returns its budget); again with a second holder that is
// destroyed. At the end no budget is held.
func TestBudgetReturnsOnFlushAndDestroy(t *testing.T) {
	const limit = 16 << 10
	o := defaultOpts()
	o.budget = limit
	h := newHarness(t, o)
	waiter := h.addPair(0, o)
	write := func(p *budgetPair, id uint64, size int) {
		t.Helper()
		wr := verbs.SendWR{ID: id, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
			SGL: []verbs.SGE{h.a.sge(0, size)}, RemoteAddr: h.b.va(0), RKey: h.b.mr.RKey()}
		if err := p.a.PostSend(&wr); err != nil {
			t.Fatal(err)
		}
	}
	for round, c := range []struct {
		how      string
		takeAway func(*QP)
	}{
		{"moved to ERR", func(qp *QP) {
			if err := qp.Modify(verbs.QPSRTS, &verbs.QPAttr{State: verbs.QPSErr}, verbs.AttrState); err != nil {
				t.Fatal(err)
			}
		}},
		{"destroyed", func(qp *QP) { qp.Destroy() }},
	} {
		holder := h.addPair(1+round, o)
		holder.b.Destroy() // the peer is gone: nothing is acknowledged
		write(holder, 1, 64<<10)
		h.clk.RunFor(time.Millisecond)
		if _, used := h.a.stack.BudgetUse(); used != limit {
			t.Fatalf("round %d: the holder took %d bytes of budget, want all %d", round, used, limit)
		}
		if n := outstanding([]*budgetPair{holder}); n != limit {
			t.Fatalf("round %d: the holder sent %d bytes, want the budget's %d", round, n, limit)
		}
		waits := h.a.stack.ctr.Get(BudgetWaits)
		write(waiter, uint64(round), 1024)
		h.clk.RunFor(10 * time.Millisecond) // less than the local ACK timeout
		if wcs := waiter.scq.wcs; len(wcs) != 0 {
			t.Fatalf("round %d: the waiter completed %v while another QP held the whole budget", round, wcs)
		}
		if h.a.stack.ctr.Get(BudgetWaits) != waits+1 {
			t.Fatalf("round %d: budget_waits %d, want %d", round, h.a.stack.ctr.Get(BudgetWaits), waits+1)
		}
		c.takeAway(holder.a)
		h.clk.RunFor(10 * time.Millisecond)
		wantWC(t, waiter.scq.take(), verbs.WC{WRID: uint64(round), Status: verbs.WCSuccess, Opcode: verbs.WCRDMAWrite})
		if _, used := h.a.stack.BudgetUse(); used != 0 {
			t.Fatalf("round %d: %d bytes of budget in use after the holder was %s and the waiter done", round, used, c.how)
		}
	}
}

// TestBudgetKeepsAckCadence: a QP with room in the budget asks for ACKs on
// the same packets as without a budget (the last of each message, every
// AckEvery, the window's edge): the budget adds an ACK request only where
// it cuts a QP's chunk short. An earlier attempt, a small initial window
// per QP, made thousands of QPs ask an ACK on every packet.
func TestBudgetKeepsAckCadence(t *testing.T) {
	run := func(budget int) (ackReqs, pkts int) {
		o := defaultOpts()
		o.budget = budget
		o.faults.Script = func(d transport.Direction, _ int, frame []byte) transport.Verdict {
			var f wire.Frame
			if d == transport.AtoB && f.Decode(frame, 0) == nil && f.Packet.Opcode() != wire.RCAck {
				pkts++
				if f.Packet.BTH().AckReq() {
					ackReqs++
				}
			}
			return transport.Pass()
		}
		h := newHarness(t, o)
		for i := range 4 {
			h.a.post(t, verbs.SendWR{ID: uint64(i), Opcode: verbs.WRRDMAWrite, SGL: []verbs.SGE{h.a.sge(0, 200<<10)},
				RemoteAddr: h.b.va(0), RKey: h.b.mr.RKey()})
		}
		h.run()
		if wcs := h.a.scq.take(); len(wcs) != 4 || wcs[3].Status != verbs.WCSuccess {
			t.Fatalf("budget %d: completions %v", budget, wcs)
		}
		return ackReqs, pkts
	}
	wantAcks, wantPkts := run(-1)
	if gotAcks, gotPkts := run(1 << 20); gotAcks != wantAcks || gotPkts != wantPkts {
		t.Errorf("with room in the budget: %d ACK requests in %d packets, without a budget %d in %d", gotAcks, gotPkts, wantAcks, wantPkts)
	}
}

// TestBudgetLongRead: a READ's responses land in the requester's own
// receive buffer, so a READ request holds budget for all its response
// PSNs; one longer than the whole budget goes with all of it (it would
// otherwise wait forever) while WRITEs of other QPs wait their turn, and
// everything completes with no budget left held.
func TestBudgetLongRead(t *testing.T) {
	const limit = 16 << 10
	o := defaultOpts()
	o.budget = limit
	h := newHarness(t, o)
	fill(h.b.buf, 9)
	reader, writer := h.addPair(0, o), h.addPair(1, o)
	rd := verbs.SendWR{ID: 1, Opcode: verbs.WRRDMARead, Flags: verbs.SendSignaled,
		SGL: []verbs.SGE{h.a.sge(0, 64<<10)}, RemoteAddr: h.b.va(0), RKey: h.b.mr.RKey()}
	if err := reader.a.PostSend(&rd); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		wr := verbs.SendWR{ID: uint64(i), Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
			SGL: []verbs.SGE{h.a.sge(128<<10, 8<<10)}, RemoteAddr: h.b.va(256 << 10), RKey: h.b.mr.RKey()}
		if err := writer.a.PostSend(&wr); err != nil {
			t.Fatal(err)
		}
	}
	for h.clk.Step() {
		if _, used := h.a.stack.BudgetUse(); used > limit {
			t.Fatalf("%d bytes of budget in use, budget %d", used, limit)
		}
	}
	wantWC(t, reader.scq.take(), verbs.WC{WRID: 1, Status: verbs.WCSuccess, Opcode: verbs.WCRDMARead, ByteLen: 64 << 10})
	if wcs := writer.scq.take(); len(wcs) != 4 || wcs[3].Status != verbs.WCSuccess {
		t.Fatalf("writer: %v", wcs)
	}
	if !bytes.Equal(h.a.buf[:64<<10], h.b.buf[:64<<10]) {
		t.Error("READ data differs")
	}
	if _, used := h.a.stack.BudgetUse(); used != 0 {
		t.Errorf("%d bytes of budget still in use", used)
	}
	if h.a.stack.ctr.Get(BudgetWaits) == 0 {
		t.Error("the WRITEs never waited for the READ's budget")
	}
}

// TestQPRing: the FIFO of blocked QPs keeps order across growth, takes a
// QP that lost its turn back at the front, and empties.
func TestQPRing(t *testing.T) {
	var q qpRing
	qps := make([]*QP, 41)
	for i := range qps {
		qps[i] = &QP{}
	}
	for _, qp := range qps[1:30] {
		q.push(qp, false)
	}
	for _, qp := range qps[1:10] {
		if got := q.popFront(); got != qp {
			t.Fatalf("popped %p, want %p", got, qp)
		}
	}
	q.push(qps[9], true)
	for _, qp := range qps[30:40] {
		q.push(qp, false)
	}
	q.push(qps[0], true) // the ring is full now, and wrapped
	if q.n != len(q.buf) || q.head == 0 {
		t.Fatalf("%d of %d slots used from %d: not a full wrapped ring", q.n, len(q.buf), q.head)
	}
	q.push(qps[40], false) // grows
	for i, qp := range append([]*QP{qps[0]}, qps[9:]...) {
		if got := q.popFront(); got != qp {
			t.Fatalf("pop %d: %p, want %p", i, got, qp)
		}
	}
	if q.popFront() != nil || q.n != 0 {
		t.Fatal("ring not empty")
	}
}
