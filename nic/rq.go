// Receive queues: the FIFO of receive WQEs that a responder takes from
// (verbs.RecvQueue), used both as a QP's own receive queue and inside an
// SRQ. Posting copies the WR (see slab.go); Pop and Len never allocate.

package nic

import (
	"sync"
	"sync/atomic"

	"github.com/rnic/rnic/nic/verbs"
)

// recvRing is a bounded FIFO of receive WQEs. Its methods take mu.
type recvRing struct {
	mu   sync.Mutex
	ring []verbs.RecvWR // capacity = max_recv_wr (or the SRQ's max_wr)
	head int
	n    int
	slab slab
	// gen counts clears (modify to RESET), so a post that looked at the
	// QP state before a reset can tell.
	gen atomic.Uint64
}

func newRecvRing(maxWR int) recvRing {
	return recvRing{ring: make([]verbs.RecvWR, maxWR)}
}

// push appends a copy of wr. Caller holds mu and has checked room.
func (r *recvRing) push(wr *verbs.RecvWR) {
	i := r.head + r.n
	if i >= len(r.ring) {
		i -= len(r.ring)
	}
	r.ring[i] = verbs.RecvWR{ID: wr.ID, SGL: r.slab.sgl(wr.SGL)}
	r.n++
}

// fits reports whether the oldest WQE's buffers hold n bytes. Caller holds
// mu and has checked that the ring is not empty.
func (r *recvRing) fits(n uint64) bool {
	var total uint64
	for _, s := range r.ring[r.head].SGL {
		total += uint64(s.Length)
	}
	return total >= n
}

// pop removes the oldest WQE. Caller holds mu.
func (r *recvRing) pop() (verbs.RecvWR, bool) {
	if r.n == 0 {
		return verbs.RecvWR{}, false
	}
	wr := r.ring[r.head]
	r.ring[r.head] = verbs.RecvWR{} // drop the SGL reference
	r.head++
	if r.head == len(r.ring) {
		r.head = 0
	}
	r.n--
	return wr, true
}

// clear discards every WQE without completions (modify to RESET, IBTA
// §10.3.1: the work queues are emptied). Caller holds mu.
func (r *recvRing) clear() {
	r.gen.Add(1)
	clear(r.ring)
	r.head, r.n = 0, 0
}

// resize changes the capacity to maxWR ≥ n. Caller holds mu.
func (r *recvRing) resize(maxWR int) {
	ring := make([]verbs.RecvWR, maxWR)
	first := min(r.n, len(r.ring)-r.head)
	copy(ring, r.ring[r.head:r.head+first])
	copy(ring[first:r.n], r.ring[:r.n-first])
	r.ring, r.head = ring, 0
}

// rq is a QP's own receive queue.
type rq struct {
	recvRing
	maxSGE int
}

var _ verbs.RecvQueue = (*rq)(nil)

// Pop implements verbs.RecvQueue.
func (q *rq) Pop() (verbs.RecvWR, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.pop()
}

// PopFit implements verbs.RecvQueue.
func (q *rq) PopFit(n uint64) (verbs.RecvWR, bool, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.n == 0 {
		return verbs.RecvWR{}, false, false
	}
	if !q.fits(n) {
		return verbs.RecvWR{}, true, false
	}
	wr, _ := q.pop()
	return wr, true, true
}

// Len implements verbs.RecvQueue.
func (q *rq) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n
}

// checkRecvWR checks a receive WR against a queue's SGE limit.
func checkRecvWR(wr *verbs.RecvWR, maxSGE int) error {
	if wr == nil {
		return errorf(verbs.ErrInvalid, "nil receive WR")
	}
	if len(wr.SGL) > maxSGE {
		return errorf(verbs.ErrInvalid, "receive WR has %d SGEs, the queue allows %d", len(wr.SGL), maxSGE)
	}
	return nil
}
