// Asynchronous events (ibv_get_async_event): CQ errors, QP errors and
// milestones reported by the engines, SRQ limits. Raising an event never
// blocks: the queue is a buffered channel, and an event that finds it full
// is dropped and counted, because the raisers are engine goroutines and the
// CQ/SRQ hot paths, which must not wait for the application.

package nic

import (
	"sync"
	"sync/atomic"

	"github.com/rnic/rnic/nic/verbs"
)

// Event is an asynchronous event (struct ibv_async_event): its type and the
// object it concerns. Exactly one of QP, CQ and SRQ is set, or none for a
// port event (Port is then 1).
type Event struct {
	Type verbs.AsyncEvent
	QP   *QP
	CQ   *CQ
	SRQ  *SRQ
	Port uint8
}

// eventQueue delivers events to the application.
type eventQueue struct {
	mu      sync.Mutex // orders raise against close
	closed  bool
	ch      chan Event
	dropped atomic.Uint64
}

func newEventQueue(n int) *eventQueue {
	if n <= 0 {
		n = verbs.DefaultEventQueueLen
	}
	return &eventQueue{ch: make(chan Event, n)}
}

// raise queues e, or drops and counts it if the queue is full or closed.
func (q *eventQueue) raise(e Event) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	select {
	case q.ch <- e:
	default:
		q.dropped.Add(1)
	}
}

func (q *eventQueue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed {
		q.closed = true
		close(q.ch)
	}
}

// Events returns the channel of asynchronous events. It is closed by Close.
// Read it continuously: events that find it full are dropped (see
// EventsDropped), since nothing that raises them may block.
func (d *Device) Events() <-chan Event { return d.events.ch }

// EventsDropped returns how many events were dropped because the event
// channel was full.
func (d *Device) EventsDropped() uint64 { return d.events.dropped.Load() }
