// The drainer of a QP's or SRQ's work rings: it takes the WQEs a client
// publishes and posts them to the daemon's ibv object.
//
// Each WQE is copied out of its slot once, into the drainer's own buffer,
// and decoded from the copy: the client may be rewriting the slot. The
// consumer index advances (freeing the slot for the client) as soon as
// the WQE is copied out, so a client that saw a WR complete always finds
// its slot free again. The drainer holds at most a batch of decoded WQEs;
// a queue the NIC reports full keeps them, the drainer stops taking slots
// and retries on a backing-off timer, which turns the NIC's queue depth
// into back-pressure on the ring.
//
// Sleeping follows the handshake in proto/ring.go: store sleeping = 1,
// look at the producer indices again, wait on the doorbell only if nothing
// came.

package server

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/verbs"
)

// Retry timing of a drainer whose NIC queue is full.
const (
	fullRetryMin = 20 * time.Microsecond
	fullRetryMax = 2 * time.Millisecond
)

// postBatch is how many WQEs a drainer posts per call into the NIC.
const postBatch = 16

// drainer drains one object's rings.
type drainer struct {
	s     *Session
	rings *proto.WorkRings
	bell  waker
	ud    bool // send WQEs name an address handle

	postSend func(...*verbs.SendWR) error // nil for an SRQ
	postRecv func(...*verbs.RecvWR) error
	// clientError reports a client error on the rings (the WQE or
	// index at fault is in err); it runs with mu held.
	clientError func(err error)

	mu sync.Mutex // held while draining; Modify and Destroy take it too
	sq sendRing
	rq recvRing

	stopping atomic.Bool
	done     chan struct{}
}

// ringCursor is where the drainer is in a work ring.
type ringCursor struct {
	cons   uint32 // the consumer index; never read back from the ring
	broken bool   // a runaway producer index: the ring is not drained again
	slot   []byte // the copy of the slot being decoded
	n      int    // decoded WQEs waiting in wrs[:n] (the NIC was full)
}

// avail is how many slots the client has filled past the cursor. A
// runaway producer index breaks the ring (-1), which d tells the client.
func (c *ringCursor) avail(d *drainer, r *proto.WorkRing) int {
	avail, err := r.CheckProducer(r.Prod.Load(), c.cons)
	if err != nil {
		c.broken = true
		c.n = 0
		d.ringError(err)
		return -1
	}
	return int(avail)
}

// take copies the next slot, which then belongs to the client again.
func (c *ringCursor) take(r *proto.WorkRing) {
	copy(c.slot, r.Slot(c.cons))
	c.cons++
	r.Cons.Store(c.cons)
}

// sendRing is the drainer's side of a send ring.
type sendRing struct {
	ringCursor
	wr      [postBatch]verbs.SendWR
	wrs     [postBatch]*verbs.SendWR
	sgl     []verbs.SGE // postBatch × max SGEs
	inline  []byte      // postBatch × max inline bytes
	maxSGE  int
	maxData int
}

// recvRing is the drainer's side of a receive ring.
type recvRing struct {
	ringCursor
	wr     [postBatch]verbs.RecvWR
	wrs    [postBatch]*verbs.RecvWR
	sgl    []verbs.SGE
	maxSGE int
}

func newDrainer(s *Session, rings *proto.WorkRings, bell waker) *drainer {
	d := &drainer{s: s, rings: rings, bell: bell}
	if n := rings.SQ.SlotSize(); n > 0 {
		room := int(n) - proto.SendWQEHeaderLen
		d.sq.slot = make([]byte, n)
		d.sq.maxSGE, d.sq.maxData = room/proto.SGELen, room
		d.sq.sgl = make([]verbs.SGE, postBatch*d.sq.maxSGE)
		d.sq.inline = make([]byte, postBatch*d.sq.maxData)
		for i := range d.sq.wrs {
			d.sq.wrs[i] = &d.sq.wr[i]
		}
	}
	if n := rings.RQ.SlotSize(); n > 0 {
		d.rq.slot = make([]byte, n)
		d.rq.maxSGE = (int(n) - proto.RecvWQEHeaderLen) / proto.SGELen
		d.rq.sgl = make([]verbs.SGE, postBatch*d.rq.maxSGE)
		for i := range d.rq.wrs {
			d.rq.wrs[i] = &d.rq.wr[i]
		}
	}
	return d
}

// run drains until halt, then closes done.
func (d *drainer) run(done chan struct{}) {
	defer close(done)
	retry := fullRetryMin
	for !d.stopping.Load() {
		d.mu.Lock()
		full := d.drain()
		d.mu.Unlock()
		if full {
			if d.bell.wait(retry) != nil {
				return
			}
			retry = min(2*retry, fullRetryMax)
			continue
		}
		retry = fullRetryMin
		d.rings.Sleeping.Store(1)
		if d.pending() {
			d.rings.Sleeping.Store(0)
			continue
		}
		err := d.bell.wait(0)
		d.rings.Sleeping.Store(0)
		if err != nil {
			return
		}
	}
}

// start runs the drainer. done is set under mu: the session's goroutine
// starts and halts its drainers, but a test's hook (HaltUDDrainers) does
// from its own.
func (d *drainer) start() {
	d.stopping.Store(false)
	done := make(chan struct{})
	d.mu.Lock()
	d.done = done
	d.mu.Unlock()
	go d.run(done)
}

// halt stops the drainer and waits for it; start runs it again.
func (d *drainer) halt() {
	d.stopping.Store(true)
	d.bell.wake()
	d.mu.Lock()
	done := d.done
	d.mu.Unlock()
	<-done
}

// pending reports whether a ring holds WQEs not yet taken, or decoded ones
// wait.
func (d *drainer) pending() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.sq.n > 0 || d.rq.n > 0 {
		return true
	}
	if d.rings.SQ.Slots() > 0 && !d.sq.broken && d.rings.SQ.Prod.Load() != d.sq.cons {
		return true
	}
	return d.rings.RQ.Slots() > 0 && !d.rq.broken && d.rings.RQ.Prod.Load() != d.rq.cons
}

// drain posts what the rings hold; full reports a NIC queue that took
// less than all. The caller holds mu.
func (d *drainer) drain() (full bool) {
	if d.postSend != nil && d.rings.SQ.Slots() > 0 {
		full = d.drainSend()
	}
	if d.rings.RQ.Slots() > 0 {
		full = d.drainRecv() || full
	}
	return full
}

// ringError reports a runaway index: the ring is given up.
func (d *drainer) ringError(err error) {
	d.s.srv.stats.ringIndexErrors.Add(1)
	d.s.counts.clientErrors.Add(1)
	d.clientError(err)
}

// wqeError reports a WQE that was malformed or refused by the NIC.
func (d *drainer) wqeError(err error) {
	d.s.srv.stats.badWQEs.Add(1)
	d.s.counts.clientErrors.Add(1)
	d.clientError(err)
}

func (d *drainer) drainSend() (full bool) {
	r, q := &d.rings.SQ, &d.sq
	if q.broken {
		return false
	}
	for {
		// Take slots while there is room in the batch.
		avail := q.avail(d, r)
		if avail < 0 {
			return false
		}
		before := avail
		for ; avail > 0 && q.n < postBatch; avail-- {
			q.take(r)
			i := q.n
			ah, err := proto.DecodeSendWQE(q.slot, &q.wr[i], q.sgl[i*q.maxSGE:(i+1)*q.maxSGE:(i+1)*q.maxSGE],
				q.inline[i*q.maxData:(i+1)*q.maxData:(i+1)*q.maxData])
			if err == nil && d.ud {
				q.wr[i].AH, err = d.s.addressVector(ah)
			}
			if err != nil {
				// What came before it goes first, if the NIC takes it;
				// then the QP goes to ERR, where the rest is flushed.
				d.postSends()
				d.wqeError(err)
				continue
			}
			q.n++
		}
		d.s.counts.sendWRs.Add(uint64(before - avail))
		if q.n == 0 {
			return false
		}
		if d.postSends() != nil {
			return true
		}
	}
}

// consumed says how many WQEs at the front a failed post took: those
// the NIC posted before the failing one, plus the failing one if the NIC
// refused it (a client error: counted, and skipped) rather than found its
// queue full, which full reports.
func (d *drainer) consumed(err error) (n int, full bool) {
	var pe *verbs.PostError
	if errors.As(err, &pe) {
		n = pe.Index
	}
	if errors.Is(err, verbs.ErrQueueFull) {
		return n, true
	}
	d.wqeError(err)
	return n + 1, false
}

// postSends posts the decoded send WQEs; it returns an error if the NIC's
// queue is full, keeping those not posted. A WQE the NIC refuses is a
// client error, and skipped.
func (d *drainer) postSends() error {
	q := &d.sq
	for q.n > 0 {
		err := d.postSend(q.wrs[:q.n]...)
		if err == nil {
			q.n = 0
			return nil
		}
		posted, full := d.consumed(err)
		// Keep the WQEs not posted, in order, at the front.
		copy(q.wr[:], q.wr[posted:q.n])
		q.n -= posted
		rebase(q.wr[:q.n], q.sgl, q.inline, q.maxSGE, q.maxData)
		if full {
			return err
		}
	}
	return nil
}

// rebase points the SGL and Inline of wrs, moved to the front of the
// batch, at their own storage again (a WR at index i owns sgl and inline
// slice i).
func rebase(wrs []verbs.SendWR, sgl []verbs.SGE, inline []byte, maxSGE, maxData int) {
	for i := range wrs {
		w := &wrs[i]
		if w.SGL != nil {
			dst := sgl[i*maxSGE : i*maxSGE+len(w.SGL)]
			copy(dst, w.SGL)
			w.SGL = dst
		}
		if w.Inline != nil {
			dst := inline[i*maxData : i*maxData+len(w.Inline)]
			copy(dst, w.Inline)
			w.Inline = dst
		}
	}
}

func (d *drainer) drainRecv() (full bool) {
	r, q := &d.rings.RQ, &d.rq
	if q.broken {
		return false
	}
	defer func() {
		// Tell a client waiting in PostRecv: what was taken is in the
		// NIC, and if the NIC's queue is full so is everything posted.
		done := q.cons
		if full {
			if p := r.Prod.Load(); p-q.cons <= r.Slots() {
				done = p
			}
		}
		d.rings.RQDone.Store(done)
	}()
	for {
		avail := q.avail(d, r)
		if avail < 0 {
			return false
		}
		before := avail
		for ; avail > 0 && q.n < postBatch; avail-- {
			q.take(r)
			i := q.n
			if err := proto.DecodeRecvWQE(q.slot, &q.wr[i], q.sgl[i*q.maxSGE:(i+1)*q.maxSGE:(i+1)*q.maxSGE]); err != nil {
				d.postRecvs()
				d.wqeError(err)
				continue
			}
			q.n++
		}
		d.s.counts.recvWRs.Add(uint64(before - avail))
		if q.n == 0 {
			return false
		}
		if d.postRecvs() != nil {
			return true
		}
	}
}

// postRecvs posts the decoded receive WQEs, as postSends does.
func (d *drainer) postRecvs() error {
	q := &d.rq
	for q.n > 0 {
		err := d.postRecv(q.wrs[:q.n]...)
		if err == nil {
			q.n = 0
			return nil
		}
		posted, full := d.consumed(err)
		copy(q.wr[:], q.wr[posted:q.n])
		q.n -= posted
		rebaseRecv(q.wr[:q.n], q.sgl, q.maxSGE)
		if full {
			return err
		}
	}
	return nil
}

func rebaseRecv(wrs []verbs.RecvWR, sgl []verbs.SGE, maxSGE int) {
	for i := range wrs {
		dst := sgl[i*maxSGE : i*maxSGE+len(wrs[i].SGL)]
		copy(dst, wrs[i].SGL)
		wrs[i].SGL = dst
	}
}

// discard drops every WQE the rings hold (a QP reset to RESET: verbs
// empties its queues). The caller holds mu.
func (d *drainer) discard() {
	if d.rings.SQ.Slots() > 0 && !d.sq.broken {
		d.sq.n = 0
		if _, err := d.rings.SQ.CheckProducer(d.rings.SQ.Prod.Load(), d.sq.cons); err == nil {
			d.sq.cons = d.rings.SQ.Prod.Load()
		}
		d.rings.SQ.Cons.Store(d.sq.cons)
	}
	if d.rings.RQ.Slots() > 0 && !d.rq.broken {
		d.rq.n = 0
		if _, err := d.rings.RQ.CheckProducer(d.rings.RQ.Prod.Load(), d.rq.cons); err == nil {
			d.rq.cons = d.rings.RQ.Prod.Load()
		}
		d.rings.RQ.Cons.Store(d.rq.cons)
		d.rings.RQDone.Store(d.rq.cons)
	}
}
