// Helpers: an engine-like writer that respects backpressure, a receiver
// that records what arrived and when, and the checks made on them.

package streamtest

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/rnic/rnic/transport/stream"
)

// Pattern returns n pseudo-random bytes drawn from seed.
func Pattern(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 0xb17e5))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// Feeder writes data into a Conn the way the engine will: in random sizes,
// holding its own lock while it calls Write, stopping at ErrWouldBlock and
// resuming from the writable callback; it closes the Conn at the end when
// asked. Its exported fields are guarded by Mu.
type Feeder struct {
	Mu       sync.Mutex
	Conn     stream.Conn
	Data     []byte
	Off      int
	rng      *rand.Rand
	maxWrite int
	close    bool
	Writes   []int // sizes of accepted writes, in order
	Refusals int   // ErrWouldBlock seen
	Closed   bool
	Err      error
	Done     chan struct{}
}

// NewFeeder returns a Feeder of data into c, writing at most maxWrite
// bytes at a time in sizes drawn from seed, and installs its Pump as c's
// writable callback. Nothing is written before the first Pump.
func NewFeeder(c stream.Conn, data []byte, seed uint64, maxWrite int, close bool) *Feeder {
	f := &Feeder{Conn: c, Data: data, rng: rand.New(rand.NewPCG(seed, 0xfeed)), maxWrite: maxWrite,
		close: close, Done: make(chan struct{})}
	c.SetWritable(f.Pump)
	return f
}

// Pump writes until the data is gone or the Conn refuses.
func (f *Feeder) Pump() {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	for f.Off < len(f.Data) && f.Err == nil {
		n := min(1+f.rng.IntN(f.maxWrite), len(f.Data)-f.Off)
		_, err := f.Conn.Write(f.Data[f.Off : f.Off+n])
		if errors.Is(err, stream.ErrWouldBlock) {
			f.Refusals++
			return
		}
		if err != nil {
			f.Err = err
			close(f.Done)
			return
		}
		f.Writes = append(f.Writes, n)
		f.Off += n
	}
	if f.Off == len(f.Data) && !f.Closed && f.Err == nil {
		f.Closed = true
		if f.close {
			if err := f.Conn.Close(); err != nil {
				f.Err = err
			}
		}
		close(f.Done)
	}
}

// Sink records what a Conn delivers. Its exported fields are guarded by
// Mu; Closed is closed at the first onClose.
type Sink struct {
	Mu       sync.Mutex
	now      func() time.Duration // nil: no times
	Got      []byte
	Chunks   []int
	Times    []time.Duration
	CloseErr error
	Closes   int
	AfterEnd int // onData calls after onClose (must stay 0)
	Closed   chan struct{}
}

// NewSink installs a Sink as c's receiver. now, if set, stamps each
// chunk (Times).
func NewSink(c stream.Conn, now func() time.Duration) *Sink {
	s := &Sink{now: now, Closed: make(chan struct{})}
	c.SetReceiver(s.OnData, s.OnClose)
	return s
}

// OnData is the receiver's onData.
func (s *Sink) OnData(p []byte) {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	if s.Closes > 0 {
		s.AfterEnd++
	}
	s.Got = append(s.Got, p...)
	s.Chunks = append(s.Chunks, len(p))
	if s.now != nil {
		s.Times = append(s.Times, s.now())
	}
}

// OnClose is the receiver's onClose.
func (s *Sink) OnClose(err error) {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	s.Closes++
	if s.Closes == 1 {
		s.CloseErr = err
		close(s.Closed)
	}
}

// Result returns a snapshot of what arrived and how it ended.
func (s *Sink) Result() (got []byte, closes int, err error) {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	return append([]byte(nil), s.Got...), s.Closes, s.CloseErr
}

// Wait waits (wall time) for onClose, failing the test after 30s.
func (s *Sink) Wait(t *testing.T, what string) {
	t.Helper()
	select {
	case <-s.Closed:
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

// SplitAndCoalesced reports whether some chunk boundary falls inside a
// write (a write was split) and whether some write boundary falls inside a
// chunk (writes were coalesced).
func SplitAndCoalesced(writes, chunks []int) (split, coalesced bool) {
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

// FirstDiff is the offset of the first byte where a and b differ, or the
// shorter length.
func FirstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// CheckDelivered fails the test unless s got exactly want and one
// onClose with wantErr, and no bytes after it.
func CheckDelivered(t *testing.T, name string, s *Sink, want []byte, wantErr error) {
	t.Helper()
	got, closes, err := s.Result()
	if !bytes.Equal(got, want) {
		t.Errorf("%s: got %d bytes, want %d; first difference at %d", name, len(got), len(want), FirstDiff(got, want))
	}
	if closes != 1 {
		t.Errorf("%s: onClose called %d times, want 1", name, closes)
	} else if !errors.Is(err, wantErr) {
		t.Errorf("%s: onClose(%v), want %v", name, err, wantErr)
	}
	if s.AfterEnd != 0 {
		t.Errorf("%s: %d onData calls after onClose", name, s.AfterEnd)
	}
}

// CheckNoLeak fails the test if, once it is over, more goroutines run than
// at the start (waiting a little for goroutines that are ending).
func CheckNoLeak(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for {
			now := runtime.NumGoroutine()
			if now <= before {
				return
			}
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				buf = buf[:runtime.Stack(buf, true)]
				t.Errorf("goroutine leak: %d before, %d after:\n%s", before, now, buf)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// WaitFeeder waits (wall time, up to 60s) until f has written all its
// data, failing the test if it is stuck or met an error.
func WaitFeeder(t *testing.T, name string, f *Feeder) {
	t.Helper()
	select {
	case <-f.Done:
	case <-time.After(60 * time.Second):
		t.Fatalf("%s: writer stuck", name)
	}
	if f.Err != nil {
		t.Fatalf("%s: %v", name, f.Err)
	}
}

// Loopbacks are the addresses the kernel-socket tests run on, one per
// family.
var Loopbacks = []string{"127.0.0.1", "::1"}
