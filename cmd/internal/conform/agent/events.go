package agent

import (
	"sync"
	"time"

	"github.com/rnic/rnic/nic/ibv"
)

// eventLog keeps the device's async events for the sessions: the device
// has one event channel, each session reads the events of its own QPs
// (and the port's) from where it last stopped.
type eventLog struct {
	mu     sync.Mutex
	events []ibv.Event
	base   int           // absolute index of events[0]
	more   chan struct{} // closed and replaced on each new event
	done   chan struct{}
}

// maxEvents bounds the log; older events are forgotten.
const maxEvents = 4096

func newEventLog(d ibv.Device) *eventLog {
	l := &eventLog{more: make(chan struct{}), done: make(chan struct{})}
	go l.collect(d.Events())
	return l
}

func (l *eventLog) collect(ch <-chan ibv.Event) {
	for {
		select {
		case e, ok := <-ch:
			if !ok {
				return
			}
			l.mu.Lock()
			if len(l.events) == maxEvents {
				l.events = append(l.events[:0], l.events[1:]...)
				l.base++
			}
			l.events = append(l.events, e)
			close(l.more)
			l.more = make(chan struct{})
			l.mu.Unlock()
		case <-l.done:
			return
		}
	}
}

func (l *eventLog) close() {
	select {
	case <-l.done:
	default:
		close(l.done)
	}
}

// since returns the events from absolute index n on and the index after
// them, waiting up to wait for one if there is none.
func (l *eventLog) since(n int, wait time.Duration) ([]ibv.Event, int) {
	deadline := time.Now().Add(wait)
	for {
		l.mu.Lock()
		i := min(max(n-l.base, 0), len(l.events)) // events trimmed since are lost
		if i < len(l.events) || wait <= 0 {
			out := append([]ibv.Event(nil), l.events[i:]...)
			l.mu.Unlock()
			return out, l.base + i + len(out)
		}
		more := l.more
		l.mu.Unlock()
		t := time.NewTimer(time.Until(deadline))
		select {
		case <-more:
			t.Stop()
		case <-t.C:
			wait = 0
		}
	}
}
