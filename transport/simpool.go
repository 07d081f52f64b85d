// Free lists of the simulated link: the frame buffers and the scheduled
// arrivals it reuses, so that carrying a frame allocates nothing once as
// many frames as are in flight at a time have been carried before.

package transport

import (
	"math/bits"
	"time"
	"unsafe"

	"github.com/rnic/rnic/transport/clock"
)

// Buffers smaller than minPoolBuf are not kept (a duplicate's copy is a
// plain clone of its frame's length), and at most maxPoolBufs are: beyond
// that a burst's buffers go back to the garbage collector.
const (
	minPoolBuf  = 2048
	maxPoolBufs = 4096
)

// framePool holds frame buffers of at least minPoolBuf bytes.
type framePool struct{ free [][]byte }

// take returns a copy of frame in a buffer from the pool, or in a new one
// whose capacity is a power of two. A pooled buffer too small for frame is
// dropped rather than kept: the pool converges on buffers that fit the
// link's largest frames instead of allocating for every large frame behind
// a small buffer.
func (p *framePool) take(frame []byte) []byte {
	if n := len(p.free); n > 0 {
		b := p.free[n-1]
		p.free[n-1] = nil
		p.free = p.free[:n-1]
		if cap(b) >= len(frame) {
			b = b[:len(frame)]
			copy(b, frame)
			return b
		}
	}
	size := max(minPoolBuf, 1<<bits.Len(uint(len(frame)-1)))
	b := make([]byte, len(frame), size)
	copy(b, frame)
	return b
}

// put returns b to the pool.
func (p *framePool) put(b []byte) {
	if cap(b) >= minPoolBuf && len(p.free) < maxPoolBufs {
		p.free = append(p.free, b[:0])
	}
}

// sameBytes reports whether a and b start at the same byte (both non-empty).
func sameBytes(a, b []byte) bool { return unsafe.SliceData(a) == unsafe.SliceData(b) }

// arrival is one copy of a frame on its way, with the clock timer that
// delivers it; both are reused for later frames.
type arrival struct {
	link  *simLink
	dir   Direction
	note  LinkNote
	frame []byte
	after time.Duration // from the send to the delivery
	timer clock.Timer
	fire  func()
}

// takeArrival returns a free arrival; l.mu is held.
func (l *simLink) takeArrival() *arrival {
	if n := len(l.arrivals); n > 0 {
		a := l.arrivals[n-1]
		l.arrivals[n-1] = nil
		l.arrivals = l.arrivals[:n-1]
		return a
	}
	a := &arrival{link: l}
	a.fire = func() { l.deliver(a) }
	a.timer = l.clk.NewTimer(a.fire)
	return a
}

// release returns a delivered or discarded arrival and its buffer; l.mu is
// held.
func (l *simLink) release(a *arrival) {
	l.bufs.put(a.frame)
	a.frame = nil
	if len(l.arrivals) < maxPoolBufs {
		l.arrivals = append(l.arrivals, a)
	}
}

// schedule arranges the delivery a.after from now. The timer is made
// with the arrival (takeArrival): when schedule made it with AfterFunc,
// the clock's runner could deliver and release the arrival, and another
// sender take it and look at a.timer, before AfterFunc's result was stored
// (a data race the race detector found). Reset takes the clock's next
// sequence number, as AfterFunc did, so deliveries keep the order of
// their Sends.
func (a *arrival) schedule() { a.timer.Reset(a.after) }
