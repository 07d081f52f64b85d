// The session doorbell (proto/bell.go): one wake-up socket (wakeup.go)
// and one shared bitmap per session wake the drainers of all its QPs and
// SRQs, so a session's descriptors do not grow with its objects. Each
// drainer still sleeps on its own, on a channel the session's bell loop
// signals when the drainer's bit was rung.

package server

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/verbs"
)

// waker is what a drainer sleeps on: its bit in the session doorbell.
type waker interface {
	// wait waits to be woken, for at most timeout if it is positive; it
	// returns an error once the waker is closed.
	wait(timeout time.Duration) error
	wake()
	close() error
	// fds are the descriptors the client gets to ring it.
	fds() []int
}

var errWakerClosed = errors.New("rnicd: drainer waker closed")

// sessionBell is a session's doorbell: the bitmap the client rings, the
// socket it writes (the daemon's end, and the client's until OPEN's reply
// sent it), and the drainers by bell.
type sessionBell struct {
	mem  *memory.Shared
	view *proto.SessionBell
	wake *wakeReader
	pair wakePair      // pair.peer is closed once OPEN's reply sent it
	done chan struct{} // closed when run returns

	rung *atomic.Uint64 // the session's doorbell counter

	mu     sync.RWMutex
	wakers []*bellWaker // by bell; nil when free
	free   []uint32
}

func newSessionBell(rung *atomic.Uint64) (*sessionBell, error) {
	mem, err := memory.NewShared(proto.BellAreaLen)
	if err != nil {
		return nil, err
	}
	view, err := proto.NewSessionBell(mem.Bytes())
	if err != nil {
		mem.Close()
		return nil, err
	}
	pair, err := newWakePair(false)
	if err != nil {
		mem.Close()
		return nil, err
	}
	b := &sessionBell{mem: mem, view: view, wake: newWakeReader(pair.own), pair: pair, rung: rung, done: make(chan struct{})}
	go b.run()
	return b, nil
}

// run wakes the drainers whose bells the client rang, until close (or
// until the client closes its end: it can ring no more).
//
// No ring is lost: the client sets its bits before it sends its byte, and
// this loop drains the socket before it takes the bits. A bit set after a
// take comes with a byte sent after the drain, which the next wait
// returns for; if that send found the socket full (EAGAIN), the bytes
// already in it make the next wait return all the same.
func (b *sessionBell) run() {
	defer close(b.done)
	for b.wake.wait(0) == nil {
		b.view.Take(b.ring)
	}
}

// ring wakes the drainer of bell i; a client ringing a free bell wakes
// nothing.
func (b *sessionBell) ring(i uint32) {
	b.rung.Add(1)
	b.mu.RLock()
	var w *bellWaker
	if int(i) < len(b.wakers) {
		w = b.wakers[i]
	}
	b.mu.RUnlock()
	if w != nil {
		w.wake()
	}
}

// add gives a drainer a bell.
func (b *sessionBell) add() (*bellWaker, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	w := &bellWaker{b: b, c: make(chan struct{}, 1), closed: make(chan struct{})}
	if n := len(b.free); n > 0 {
		w.i, b.free = b.free[n-1], b.free[:n-1]
	} else if len(b.wakers) < proto.MaxBells {
		w.i = uint32(len(b.wakers))
		b.wakers = append(b.wakers, nil)
	} else {
		return nil, fmt.Errorf("rnicd: %d QPs and SRQs in one session: %w", proto.MaxBells, verbs.ErrNoMemory)
	}
	b.wakers[w.i] = w
	return w, nil
}

func (b *sessionBell) remove(w *bellWaker) {
	b.mu.Lock()
	b.wakers[w.i] = nil
	b.free = append(b.free, w.i)
	b.mu.Unlock()
}

// close ends the bell loop and then (it may be reading the bitmap) frees
// the memory.
func (b *sessionBell) close() {
	b.wake.close()
	<-b.done
	b.mem.Close()
}

// bellWaker is a drainer's bit in the session doorbell.
type bellWaker struct {
	b      *sessionBell
	i      uint32
	c      chan struct{}
	once   sync.Once
	closed chan struct{}
	timer  *time.Timer // only the drainer waits
}

func (w *bellWaker) wait(timeout time.Duration) error {
	var expired <-chan time.Time
	if timeout > 0 {
		if w.timer == nil {
			w.timer = time.NewTimer(timeout)
		} else {
			w.timer.Reset(timeout)
		}
		defer w.timer.Stop()
		expired = w.timer.C
	}
	select {
	case <-w.c:
		return nil
	case <-expired:
		return nil
	case <-w.closed:
		return errWakerClosed
	}
}

func (w *bellWaker) wake() {
	select {
	case w.c <- struct{}{}:
	default:
	}
}

func (w *bellWaker) close() error {
	w.once.Do(func() {
		close(w.closed)
		w.b.remove(w)
	})
	return nil
}

func (w *bellWaker) fds() []int { return nil }

// newWaker returns what the drainer of rings sleeps on: a bell of the
// session doorbell, named in the rings.
func (s *Session) newWaker(rings *proto.WorkRings) (waker, error) {
	if s.bell == nil {
		return nil, fmt.Errorf("rnicd: no session doorbell before OPEN: %w", verbs.ErrInvalid)
	}
	w, err := s.bell.add()
	if err != nil {
		return nil, err
	}
	rings.Bell.Store(w.i)
	return w, nil
}
