// Helpers shared by the tests: an engine-like writer that respects
// backpressure, and a receiver that records what arrived and when.

package stream_test

import (
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/rnic/rnic/transport/stream"
)

// pattern returns n pseudo-random bytes drawn from seed.
func pattern(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 0xb17e5))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// feeder writes data into a Conn the way the engine will: in random sizes,
// holding its own lock while it calls Write, stopping at ErrWouldBlock and
// resuming from the writable callback; it closes the Conn at the end when
// asked.
type feeder struct {
	mu       sync.Mutex
	c        stream.Conn
	data     []byte
	off      int
	rng      *rand.Rand
	maxWrite int
	close    bool
	writes   []int // sizes of accepted writes, in order
	refusals int   // ErrWouldBlock seen
	closed   bool
	err      error
	doneCh   chan struct{}
}

func newFeeder(c stream.Conn, data []byte, seed uint64, maxWrite int, close bool) *feeder {
	f := &feeder{c: c, data: data, rng: rand.New(rand.NewPCG(seed, 0xfeed)), maxWrite: maxWrite,
		close: close, doneCh: make(chan struct{})}
	c.SetWritable(f.pump)
	return f
}

// pump writes until the data is gone or the Conn refuses.
func (f *feeder) pump() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for f.off < len(f.data) && f.err == nil {
		n := min(1+f.rng.IntN(f.maxWrite), len(f.data)-f.off)
		_, err := f.c.Write(f.data[f.off : f.off+n])
		if errors.Is(err, stream.ErrWouldBlock) {
			f.refusals++
			return
		}
		if err != nil {
			f.err = err
			close(f.doneCh)
			return
		}
		f.writes = append(f.writes, n)
		f.off += n
	}
	if f.off == len(f.data) && !f.closed && f.err == nil {
		f.closed = true
		if f.close {
			if err := f.c.Close(); err != nil {
				f.err = err
			}
		}
		close(f.doneCh)
	}
}

// sink records what a Conn delivers.
type sink struct {
	mu       sync.Mutex
	now      func() time.Duration // nil: no times
	got      []byte
	chunks   []int
	times    []time.Duration
	closeErr error
	closes   int
	afterEnd int // onData calls after onClose (must stay 0)
	closed   chan struct{}
}

func newSink(c stream.Conn, now func() time.Duration) *sink {
	s := &sink{now: now, closed: make(chan struct{})}
	c.SetReceiver(s.data, s.end)
	return s
}

func (s *sink) data(p []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closes > 0 {
		s.afterEnd++
	}
	s.got = append(s.got, p...)
	s.chunks = append(s.chunks, len(p))
	if s.now != nil {
		s.times = append(s.times, s.now())
	}
}

func (s *sink) end(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closes++
	if s.closes == 1 {
		s.closeErr = err
		close(s.closed)
	}
}

// result returns a snapshot of what arrived and how it ended.
func (s *sink) result() (got []byte, closes int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]byte(nil), s.got...), s.closes, s.closeErr
}

// wait waits (wall time) for onClose.
func (s *sink) wait(t *testing.T, what string) {
	t.Helper()
	select {
	case <-s.closed:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: no onClose within 30s", what)
	}
}

// boundaries returns the cumulative offsets at which consecutive sizes
// end, the last excepted.
func boundaries(sizes []int) map[int]bool {
	m := map[int]bool{}
	off := 0
	for i, n := range sizes {
		off += n
		if i < len(sizes)-1 {
			m[off] = true
		}
	}
	return m
}

// splitAndCoalesced reports whether some chunk boundary falls inside a
// write (a write was split) and whether some write boundary falls inside a
// chunk (writes were coalesced).
func splitAndCoalesced(writes, chunks []int) (split, coalesced bool) {
	wb, cb := boundaries(writes), boundaries(chunks)
	for off := range cb {
		if !wb[off] {
			split = true
			break
		}
	}
	for off := range wb {
		if !cb[off] {
			coalesced = true
			break
		}
	}
	return split, coalesced
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
