// The stack's budget of unacknowledged bytes, shared by all RC requesters.
//
// A QP's window (window.go) bounds what one QP keeps unacknowledged; with
// many QPs their sum still overflows a link without link-level flow
// control: the embedded mode's kernel UDP socket drops what its receive
// buffer cannot hold, and 1,000 QPs of 64 KiB WRITEs each going back N
// overflowed it again at every resend until all of them exhausted
// retry_cnt. So a requester also holds budget, in path-MTU units, for every
// PSN it has sent and not seen acknowledged (a READ request: for all its
// response PSNs, whose responses land in our own receive buffer), and the
// stack's budget bounds the sum. IBTA bounds what a requester has
// outstanding only from above (the responder's end-to-end credits,
// §9.7.7.2, and the PSN space, §9.7.1) and obliges it nowhere to send as
// soon as it may: sending less, later, changes no wire rule.
//
// Budget is taken per WQE chunk (the rest of a WQE up to the window's room,
// one atomic operation) and returned when ACKs, READ responses and atomic
// ACKs advance the oldest unacknowledged PSN, and in full when the QP flushes
// (ERR, SQE), resets, is given a new SQ PSN or is destroyed. A QP that finds
// too little waits in a FIFO of blocked QPs; released budget wakes them in
// order, each for up to turnQuantum packets (its chunks of the WQEs it
// can start), and a QP that wants more while others wait queues behind
// them: round robin, no starvation. The waking runs after
// the receive batch that freed the budget (or from a clock event when a
// timer or a verb freed it), never under another QP's lock.
//
// The packet at the end of what a QP holds asks for an ACK: a QP whose
// chunk was cut short must hear back to free it. A QP that got its whole
// chunk ends it at a message's last packet or at its window's edge, which
// ask anyway, so the ACK-request cadence of a QP with room is unchanged.

package roce

import (
	"sync"
	"sync/atomic"

	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce/wire"
	"github.com/rnic/rnic/transport"
	"github.com/rnic/rnic/transport/clock"
)

// budget is the stack's pool of bytes in flight (see above).
type budget struct {
	limit int64 // bytes; 0: no budget
	inUse atomic.Int64
	nwait atomic.Int32 // QPs in the FIFO

	mu      sync.Mutex
	fifo    qpRing // blocked QPs, oldest first
	wake    clock.Timer
	pending atomic.Bool // a wake is due
}

// LinkBudget is the budget a stack on link gets by default, 0 for none;
// for a caller that wraps the link (a capture tee) before the stack sees it.
func LinkBudget(link transport.Endpoint) int { return int(defaultBudget(link)) }

// defaultBudget sizes the budget from the link: a link that drops what
// overflows its receive buffer (transport.RecvBufferSizer) gets a quarter
// of the buffer as the kernel accounts it. The kernel charges a datagram
// about twice its payload (the allocation it sits in, rounded up to a power
// of two, plus the socket buffer's head), and UDP gives back what the
// reader consumed only once it adds up to a quarter of the buffer, so
// about 3/8 of the accounted room is what full-MTU payloads can fill; the
// rest is margin for resends of packets still queued, for timing, and for
// what else the socket receives (ACKs, READ responses).
func defaultBudget(link transport.Endpoint) int64 {
	if rb, ok := link.(transport.RecvBufferSizer); ok {
		return int64(rb.RecvBufferBytes()) / 4
	}
	return 0
}

// BudgetUse returns the stack's budget of unacknowledged bytes and the
// bytes held now (0, 0 when the stack has none).
func (s *Stack) BudgetUse() (limit, inUse int64) {
	return s.budget.limit, s.budget.inUse.Load()
}

// take grants between lo and hi bytes (whole units of unit) if at least lo
// are free; 0 if not.
func (b *budget) take(lo, hi, unit int64) int64 {
	for {
		cur := b.inUse.Load()
		room := b.limit - cur
		if room < lo {
			return 0
		}
		g := min(hi, room) / unit * unit
		if b.inUse.CompareAndSwap(cur, cur+g) {
			return g
		}
	}
}

// release returns n bytes and wakes the blocked QPs if any wait.
func (s *Stack) releaseBudget(n int64) {
	b := &s.budget
	b.inUse.Add(-n)
	if b.nwait.Load() > 0 {
		s.scheduleBudgetWake()
	}
}

// scheduleBudgetWake makes the blocked QPs try again: after the receive
// batch in progress (InputBatch), or from a clock event.
func (s *Stack) scheduleBudgetWake() {
	b := &s.budget
	if !b.pending.CompareAndSwap(false, true) {
		return
	}
	b.mu.Lock()
	if b.wake == nil {
		b.wake = s.cfg.Clock.AfterFunc(0, s.wakeBudget)
	} else {
		b.wake.Reset(0)
	}
	b.mu.Unlock()
}

// wakeBudget gives the blocked QPs their turns in FIFO order until one of
// them finds too little budget (it stays at the head).
func (s *Stack) wakeBudget() {
	b := &s.budget
	if !b.pending.Swap(false) {
		return
	}
	for {
		qp := b.pop()
		if qp == nil {
			return
		}
		qp.Mu.Lock()
		blocked := false
		if !qp.destroyed {
			r := &qp.req
			r.turnLeft, r.budgetBlocked = turnQuantum, false
			r.progress()
			qp.updateTimer()
			blocked = r.budgetBlocked
			r.turnLeft = 0
		}
		qp.Mu.Unlock()
		if blocked {
			return
		}
	}
}

// pop takes the oldest blocked QP off the FIFO.
func (b *budget) pop() *QP {
	b.mu.Lock()
	defer b.mu.Unlock()
	qp := b.fifo.popFront()
	if qp != nil {
		qp.budgetQueued = false
		b.nwait.Add(-1)
	}
	return qp
}

// waitBudget puts qp in the FIFO (at the head if it lost its turn) unless
// it is there, then looks at the budget again: a release that came before
// the QP was counted as waiting woke no one, so if the lo bytes it needs
// are free now, the FIFO gets a turn.
func (s *Stack) waitBudget(qp *QP, front bool, lo int64) {
	b := &s.budget
	b.mu.Lock()
	if !qp.budgetQueued {
		qp.budgetQueued = true
		b.fifo.push(qp, front)
		b.nwait.Add(1)
		s.ctr.inc(BudgetWaits)
	}
	b.mu.Unlock()
	if b.limit-b.inUse.Load() >= lo {
		s.scheduleBudgetWake()
	}
}

// haveBudget reports whether the requester holds budget for the next
// packet of w, taking more if it must; false means wait.
func (r *requester) haveBudget(w *swqe) bool {
	qp := r.qp
	b := &qp.s.budget
	if b.limit == 0 || !qp.reliable() {
		return true
	}
	sent := int(wire.PSNDiff(r.psn, r.unacked))
	if r.held == 0 {
		r.unit = max(qp.mtu, 1)
	}
	unit := int64(r.unit)
	whole := max(int(b.limit/unit), 1)
	need, chunk := sent+1, min(sent+min(w.npkts-r.nextPkt, r.window()-sent), whole)
	if w.wr.Opcode == verbs.WRRDMARead {
		// A READ longer than the whole budget goes with all of it.
		need = min(int(wire.PSNDiff(w.lastPSN, r.unacked))+1, whole)
		chunk = need
	}
	if need <= r.held {
		return true
	}
	lo, hi := int64(need-r.held)*unit, int64(chunk-r.held)*unit
	if b.nwait.Load() > 0 && r.turnLeft <= 0 {
		qp.s.waitBudget(qp, false, lo) // others wait: behind them
		return false
	}
	g := b.take(lo, hi, unit)
	if g == 0 {
		turn := r.turnLeft > 0
		r.budgetBlocked = turn
		qp.s.waitBudget(qp, turn, lo)
		return false
	}
	r.held += int(g / unit)
	r.turnLeft -= int(g / unit)
	return true
}

// budgetEnd reports whether psn is the last PSN the requester holds budget
// for: that packet asks for an ACK, or a QP cut short would wait for its
// local ACK timer.
func (r *requester) budgetEnd(psn uint32) bool {
	return r.held > 0 && int(wire.PSNDiff(wire.PSNAdd(psn, 1), r.unacked)) >= r.held
}

// settleBudget returns what the requester holds beyond its unacknowledged
// PSNs (after ACKs advanced them).
func (r *requester) settleBudget() {
	out := max(int(wire.PSNDiff(r.maxSent, r.unacked)), 0)
	if r.held > out {
		n := r.held - out
		r.held = out
		r.qp.s.releaseBudget(int64(n) * int64(r.unit))
	}
}

// releaseAllBudget returns everything the requester holds (flush, reset,
// destroy, a new SQ PSN).
func (r *requester) releaseAllBudget() {
	if r.held > 0 {
		n := r.held
		r.held = 0
		r.qp.s.releaseBudget(int64(n) * int64(r.unit))
	}
}

// qpRing is a double-ended queue of QPs in a ring: O(1) at both ends.
type qpRing struct {
	buf     []*QP
	head, n int
}

// push adds qp at the back, or at the front.
func (q *qpRing) push(qp *QP, front bool) {
	if q.n == len(q.buf) {
		buf := make([]*QP, max(2*len(q.buf), 16))
		for i := range q.n {
			buf[i] = q.buf[(q.head+i)%len(q.buf)]
		}
		q.buf, q.head = buf, 0
	}
	if front {
		q.head = (q.head + len(q.buf) - 1) % len(q.buf)
		q.buf[q.head] = qp
	} else {
		q.buf[(q.head+q.n)%len(q.buf)] = qp
	}
	q.n++
}

// popFront removes and returns the front QP, nil if there is none.
func (q *qpRing) popFront() *QP {
	if q.n == 0 {
		return nil
	}
	qp := q.buf[q.head]
	q.buf[q.head] = nil
	q.head = (q.head + 1) % len(q.buf)
	q.n--
	return qp
}

// turnQuantum is how many packets' budget a woken QP may take in its turn
// (a chunk at least): enough for a burst of small messages to leave in one
// sendmmsg, few enough that a thousand waiting QPs each get theirs soon.
const turnQuantum = maxBatch

// minBudget is the smallest budget: one packet of the largest path MTU.
const minBudget = 4096
