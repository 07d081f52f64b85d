// Completion queues: a fixed ring of work completions filled by engine
// goroutines (verbs.CompletionQueue.Push) and drained by the application
// (Poll), with the completion-event arming of ibv_req_notify_cq. A single
// mutex guards the ring: pushes from several engines and polls from several
// application goroutines serialise on it, and neither allocates.
//
// Overflow follows Linux rxe, not the letter of IBTA: the spec makes a CQ
// overrun an affiliated asynchronous error (CQ Error, Vol 1 §11.6.3) after
// which the CQ takes no more completions and every QP that tries to post
// to it fails (Local Work Queue Catastrophic Error). rxe drops the
// completion that does not fit, raises IB_EVENT_CQ_ERR and takes the next
// completion that finds room (rxe_cq_post); its completer goes on, its
// responder moves the QP to ERR (class G). Programs that ran on rxe rely on
// that: ib_send_lat -e leaves a 1-entry send CQ full and goes on. So a
// full CQ here loses the completion, Push returns false for the engine to
// apply rxe's rule (roce and iwarp: the send side goes on, the receive side
// moves the QP to ERR), and EventCQErr is raised once per overflow: once
// for the completions lost back to back, again after one found room.

package nic

import (
	"sync"

	"github.com/rnic/rnic/nic/verbs"
)

// armState is what a CQ is armed for (ibv_req_notify_cq(3)).
type armState uint8

const (
	armNone      armState = iota
	armNext               // the next completion of any kind
	armSolicited          // the next solicited or unsuccessful completion
)

// CQ is a completion queue. It implements verbs.CompletionQueue.
type CQ struct {
	d      *Device
	notify chan struct{}

	mu      sync.Mutex
	ring    []verbs.WC
	head    int // oldest entry
	n       int // entries held
	arm     armState
	overrun bool   // a completion was ever lost (Err)
	losing  bool   // completions are being lost: CQ_ERR was raised for this overflow
	taken   uint32 // completions ever polled (wraps), for held
	held    func(taken uint32) uint32
	onFire  func() // SetFire
	refs    int    // QPs using the CQ as send or receive CQ (counted per use)
	dead    bool
}

var _ verbs.CompletionQueue = (*CQ)(nil)

// CreateCQ creates a CQ that holds cqe completions (ibv_create_cq). cqe
// must be 1..max_cqe; the CQ holds exactly cqe, which CQE reports.
func (d *Device) CreateCQ(cqe int) (*CQ, error) {
	if cqe < 1 || cqe > d.limits.MaxCQE {
		return nil, errorf(verbs.ErrInvalid, "create CQ: %d entries, must be 1..%d", cqe, d.limits.MaxCQE)
	}
	d.mu.Lock()
	err := d.reserve(&d.cqs, d.limits.MaxCQ, "CQ")
	d.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return &CQ{d: d, ring: make([]verbs.WC, cqe), notify: make(chan struct{}, 1)}, nil
}

// CQE returns the number of completions the CQ holds.
func (cq *CQ) CQE() int {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	return len(cq.ring)
}

// Push adds a completion (verbs.CompletionQueue). On a full CQ the
// completion is lost and Push returns false (see the top of this file);
// the first of a run of lost completions raises EventCQErr. An
// unsuccessful completion counts as solicited for a CQ armed for
// solicited events (ibv_req_notify_cq).
func (cq *CQ) Push(wc *verbs.WC) bool {
	cq.mu.Lock()
	if cq.dead {
		cq.mu.Unlock()
		return false
	}
	if cq.full() {
		cq.overrun = true
		raise := !cq.losing
		cq.losing = true
		cq.mu.Unlock()
		if raise {
			cq.d.events.raise(Event{Type: verbs.EventCQErr, CQ: cq})
		}
		return false
	}
	cq.losing = false
	i := cq.head + cq.n
	if i >= len(cq.ring) {
		i -= len(cq.ring)
	}
	cq.ring[i] = *wc
	cq.n++
	fire := cq.arm == armNext || (cq.arm == armSolicited && wc.Status != verbs.WCSuccess)
	if fire {
		cq.arm = armNone
	}
	onFire := cq.onFire
	cq.mu.Unlock()
	if fire {
		cq.fired(onFire)
	}
	return true
}

// full reports whether the CQ has no room, counting what its holder
// (SetHolder) keeps of what was polled; caller holds cq.mu.
func (cq *CQ) full() bool {
	n := len(cq.ring)
	if cq.n >= n {
		return true
	}
	if cq.held == nil {
		return false
	}
	// A holder reporting more than the capacity (a consumer index gone
	// wrong) leaves no room: its owner's loss alone.
	return uint64(cq.n)+uint64(cq.held(cq.taken)) >= uint64(n)
}

// SetHolder tells the CQ that whoever polls it keeps the completions it
// polls in a queue of its own until the application takes them, and that
// the CQ's capacity is for both together: held(taken) says how many of the
// taken completions ever polled (a count that wraps) the holder still
// keeps. rnicd's completion mover, which polls into a client's ring, is
// one: the ring is the CQ the client sees, and must overflow as one.
// held is called with the CQ's lock held; it must not block.
func (cq *CQ) SetHolder(held func(taken uint32) uint32) {
	cq.mu.Lock()
	cq.held = held
	cq.mu.Unlock()
}

// Solicited reports that the completion just pushed carries the solicited
// event flag (verbs.CompletionQueue): it fires a CQ armed for solicited or
// next completions.
func (cq *CQ) Solicited() {
	cq.mu.Lock()
	fire := cq.arm != armNone
	cq.arm = armNone
	onFire := cq.onFire
	cq.mu.Unlock()
	if fire {
		cq.fired(onFire)
	}
}

// fired reports a fired arm: to the SetFire function if there is one,
// else on Notify.
func (cq *CQ) fired(onFire func()) {
	if onFire != nil {
		onFire()
		return
	}
	cq.signal()
}

// SetFire has f called in place of a value on Notify each time the CQ's
// arm fires: on the goroutine that pushed the completion, after the CQ's
// lock is released, so in the order the engine completes. rnicd's mover
// carries the completion to its client's ring and signals the client's
// completion channel there and then: two CQs on one channel then signal
// in the order their completions came, as a kernel completion channel
// queues its events (a program that waits for one CQ's event at a time
// relies on that). f must not call Solicited.
func (cq *CQ) SetFire(f func()) {
	cq.mu.Lock()
	cq.onFire = f
	cq.mu.Unlock()
}

// Disarm cancels the CQ's arm without firing it.
func (cq *CQ) Disarm() {
	cq.mu.Lock()
	cq.arm = armNone
	cq.mu.Unlock()
}

// signal fires the completion event; a pending, unconsumed event absorbs
// it, so events coalesce as on a completion channel.
func (cq *CQ) signal() {
	select {
	case cq.notify <- struct{}{}:
	default:
	}
}

// Poll moves up to len(wcs) completions, oldest first, into wcs and returns
// how many (ibv_poll_cq). It does not allocate.
func (cq *CQ) Poll(wcs []verbs.WC) int {
	cq.mu.Lock()
	k := min(len(wcs), cq.n)
	first := min(k, len(cq.ring)-cq.head)
	copy(wcs, cq.ring[cq.head:cq.head+first])
	copy(wcs[first:k], cq.ring[:k-first])
	cq.head += k
	if cq.head >= len(cq.ring) {
		cq.head -= len(cq.ring)
	}
	cq.n -= k
	cq.taken += uint32(k)
	cq.mu.Unlock()
	return k
}

// Len returns the number of completions waiting to be polled.
func (cq *CQ) Len() int {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	return cq.n
}

// ReqNotify arms the CQ (ibv_req_notify_cq): the next completion added to
// it, or with solicitedOnly the next solicited or unsuccessful one, sends
// one event on Notify and disarms the CQ. Completions already in the CQ do
// not fire it, so poll once more after arming. Arming for any completion
// overrides a solicited-only arm; the reverse has no effect (IBTA Vol 1
// §11.4.2.2, Request Completion Notification).
func (cq *CQ) ReqNotify(solicitedOnly bool) error {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	if cq.dead {
		return errorf(verbs.ErrDestroyed, "req notify CQ")
	}
	switch {
	case !solicitedOnly:
		cq.arm = armNext
	case cq.arm == armNone:
		cq.arm = armSolicited
	}
	return nil
}

// Notify returns the CQ's completion-event channel: it receives one value
// per fired arm (events not yet received coalesce into one). The Go form
// of a completion channel and ibv_get_cq_event.
func (cq *CQ) Notify() <-chan struct{} { return cq.notify }

// Err returns an error wrapping verbs.ErrCQOverrun once the CQ has lost a
// completion to overflow, nil before. The CQ goes on taking completions
// that find room.
func (cq *CQ) Err() error {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	if cq.overrun {
		return errorf(verbs.ErrCQOverrun, "CQ of %d entries", len(cq.ring))
	}
	return nil
}

// Resize changes the capacity to cqe (ibv_resize_cq), keeping the
// completions it holds; cqe must be at least their number and at most
// max_cqe.
func (cq *CQ) Resize(cqe int) error {
	if cqe < 1 || cqe > cq.d.limits.MaxCQE {
		return errorf(verbs.ErrInvalid, "resize CQ: %d entries, must be 1..%d", cqe, cq.d.limits.MaxCQE)
	}
	ring := make([]verbs.WC, cqe)
	cq.mu.Lock()
	defer cq.mu.Unlock()
	if cq.dead {
		return errorf(verbs.ErrDestroyed, "resize CQ")
	}
	if cqe < cq.n {
		return errorf(verbs.ErrInvalid, "resize CQ to %d entries: it holds %d", cqe, cq.n)
	}
	first := min(cq.n, len(cq.ring)-cq.head)
	copy(ring, cq.ring[cq.head:cq.head+first])
	copy(ring[first:cq.n], cq.ring[:cq.n-first])
	cq.ring, cq.head = ring, 0
	return nil
}

// Destroy destroys the CQ (ibv_destroy_cq). It fails with verbs.ErrBusy while a
// QP uses it.
func (cq *CQ) Destroy() error {
	cq.mu.Lock()
	if cq.dead {
		cq.mu.Unlock()
		return errorf(verbs.ErrDestroyed, "destroy CQ")
	}
	if cq.refs > 0 {
		n := cq.refs
		cq.mu.Unlock()
		return errorf(verbs.ErrBusy, "destroy CQ: used %d times by QPs", n)
	}
	cq.dead = true
	cq.mu.Unlock()
	cq.d.release(&cq.d.cqs)
	return nil
}

// acquire records a QP's use of the CQ.
func (cq *CQ) acquire(d *Device) error {
	if cq == nil || cq.d != d {
		return errorf(verbs.ErrInvalid, "CQ is not a CQ of %s", d.name)
	}
	cq.mu.Lock()
	defer cq.mu.Unlock()
	if cq.dead {
		return errorf(verbs.ErrDestroyed, "CQ")
	}
	cq.refs++
	return nil
}

func (cq *CQ) put() {
	cq.mu.Lock()
	cq.refs--
	cq.mu.Unlock()
}
