package nic

import (
	"errors"
	"sync"
	"testing"

	"github.com/rnic/rnic/nic/verbs"
)

func newSRQ(t testing.TB, f *fixture, maxWR, maxSGE int) *SRQ {
	t.Helper()
	s, err := f.d.CreateSRQ(f.pd, maxWR, maxSGE)
	if err != nil {
		t.Fatalf("CreateSRQ: %v", err)
	}
	return s
}

func postN(t testing.TB, s *SRQ, n int) {
	t.Helper()
	for i := range n {
		if err := s.PostRecv(&verbs.RecvWR{ID: uint64(i)}); err != nil {
			t.Fatalf("PostRecv: %v", err)
		}
	}
}

func TestSRQLimitOncePerArm(t *testing.T) {
	f := newFixture(t)
	s := newSRQ(t, f, 16, 2)
	postN(t, s, 10)
	wantIs(t, "arm 5", s.ModifySRQ(verbs.SRQAttr{Limit: 5}, verbs.SRQLimit), nil)
	if s.Query().Limit != 5 {
		t.Fatal("limit not armed")
	}
	for range 5 { // 10 → 5 WQEs: not below the limit yet
		s.Pop()
	}
	noEvent(t, f.d)
	s.Pop() // 4 < 5
	e := nextEvent(t, f.d)
	if e.Type != verbs.EventSRQLimitReached || e.SRQ != s {
		t.Fatalf("event %+v", e)
	}
	if s.Query().Limit != 0 {
		t.Error("limit still armed after the event")
	}
	for range 4 {
		s.Pop()
	}
	noEvent(t, f.d) // once per arm

	// Re-arm: fires again.
	postN(t, s, 3)
	wantIs(t, "re-arm", s.ModifySRQ(verbs.SRQAttr{Limit: 3}, verbs.SRQLimit), nil)
	s.Pop() // 2 < 3
	if e := nextEvent(t, f.d); e.Type != verbs.EventSRQLimitReached {
		t.Fatalf("re-armed: %v", e.Type)
	}
	noEvent(t, f.d)

	// Armed while already below the limit: the next Pop fires.
	wantIs(t, "arm above count", s.ModifySRQ(verbs.SRQAttr{Limit: 10}, verbs.SRQLimit), nil)
	s.Pop()
	if e := nextEvent(t, f.d); e.Type != verbs.EventSRQLimitReached {
		t.Fatalf("armed below: %v", e.Type)
	}
	// An empty Pop takes nothing and fires nothing.
	for s.Len() > 0 {
		s.Pop()
	}
	noEvent(t, f.d)
	wantIs(t, "arm", s.ModifySRQ(verbs.SRQAttr{Limit: 1}, verbs.SRQLimit), nil)
	if _, ok := s.Pop(); ok {
		t.Fatal("popped from an empty SRQ")
	}
	noEvent(t, f.d)
	// Limit 0 disarms.
	postN(t, s, 2)
	wantIs(t, "disarm", s.ModifySRQ(verbs.SRQAttr{Limit: 0}, verbs.SRQLimit), nil)
	s.Pop()
	s.Pop()
	noEvent(t, f.d)
}

func TestSRQModify(t *testing.T) {
	f := newFixture(t)
	s := newSRQ(t, f, 4, 2)
	wantIs(t, "limit > max_wr", s.ModifySRQ(verbs.SRQAttr{Limit: 5}, verbs.SRQLimit), verbs.ErrInvalid)
	wantIs(t, "negative limit", s.ModifySRQ(verbs.SRQAttr{Limit: -1}, verbs.SRQLimit), verbs.ErrInvalid)
	wantIs(t, "unknown mask", s.ModifySRQ(verbs.SRQAttr{}, 4), verbs.ErrInvalid)
	postN(t, s, 3)
	wantIs(t, "shrink below count", s.ModifySRQ(verbs.SRQAttr{MaxWR: 2}, verbs.SRQMaxWR), verbs.ErrInvalid)
	wantIs(t, "grow and arm", s.ModifySRQ(verbs.SRQAttr{MaxWR: 8, Limit: 6}, verbs.SRQMaxWR|verbs.SRQLimit), nil)
	if a := s.Query(); a != (verbs.SRQAttr{MaxWR: 8, MaxSGE: 2, Limit: 6}) {
		t.Errorf("Query %+v", a)
	}
	for i := range 3 {
		if wr, _ := s.Pop(); wr.ID != uint64(i) {
			t.Fatalf("order after resize: %d", wr.ID)
		}
	}
	nextEvent(t, f.d) // count 2 < limit 6
}

func TestSRQPost(t *testing.T) {
	f := newFixture(t)
	s := newSRQ(t, f, 4, 2)
	qa, ea := f.qpWith(QPInit{Type: verbs.QPTypeRC, SendCQ: f.cq, RecvCQ: f.cq, SRQ: s})
	_, eb := f.qpWith(QPInit{Type: verbs.QPTypeUD, SendCQ: f.cq, RecvCQ: f.cq, SRQ: s})
	wantIs(t, "3 SGEs", s.PostRecv(&verbs.RecvWR{SGL: make([]verbs.SGE, 3)}), verbs.ErrInvalid)
	wantIs(t, "nil WR", s.PostRecv(nil), verbs.ErrInvalid)
	if ea.recvPosted.Load() != 0 {
		t.Fatal("RecvPosted for nothing posted")
	}
	postN(t, s, 1) // empty → non-empty: every attached engine is told
	if ea.recvPosted.Load() != 1 || eb.recvPosted.Load() != 1 {
		t.Fatalf("RecvPosted %d %d", ea.recvPosted.Load(), eb.recvPosted.Load())
	}
	postN(t, s, 2) // non-empty: nobody waits
	if ea.recvPosted.Load() != 1 {
		t.Fatalf("RecvPosted on a non-empty SRQ")
	}
	err := s.PostRecv(&verbs.RecvWR{ID: 50}, &verbs.RecvWR{ID: 51})
	var pe *verbs.PostError
	if !errors.As(err, &pe) || pe.Index != 1 || pe.WRID != 51 || !errors.Is(err, verbs.ErrQueueFull) {
		t.Fatalf("full SRQ: %v", err)
	}
	if s.Len() != 4 {
		t.Fatalf("len %d", s.Len())
	}
	// A detached QP is no longer told.
	wantIs(t, "destroy QP", qa.Destroy(), nil)
	for range 4 {
		s.Pop()
	}
	postN(t, s, 1)
	if ea.recvPosted.Load() != 1 || eb.recvPosted.Load() != 2 {
		t.Fatalf("after detach: RecvPosted %d %d", ea.recvPosted.Load(), eb.recvPosted.Load())
	}
}

func TestSRQDestroy(t *testing.T) {
	f := newFixture(t)
	s := newSRQ(t, f, 4, 1)
	q, _ := f.qpWith(QPInit{Type: verbs.QPTypeRC, SendCQ: f.cq, RecvCQ: f.cq, SRQ: s})
	wantIs(t, "destroy attached SRQ", s.Destroy(), verbs.ErrBusy)
	wantIs(t, "dealloc PD with SRQ", f.d.DeallocPD(f.pd), verbs.ErrBusy)
	wantIs(t, "destroy QP", q.Destroy(), nil)
	wantIs(t, "destroy SRQ", s.Destroy(), nil)
	wantIs(t, "destroy SRQ twice", s.Destroy(), verbs.ErrDestroyed)
	wantIs(t, "post to destroyed SRQ", s.PostRecv(&verbs.RecvWR{}), verbs.ErrDestroyed)
	wantIs(t, "modify destroyed SRQ", s.ModifySRQ(verbs.SRQAttr{Limit: 1}, verbs.SRQLimit), verbs.ErrDestroyed)
	_, err := f.d.CreateQP(f.pd, QPInit{Type: verbs.QPTypeRC, SendCQ: f.cq, RecvCQ: f.cq, SRQ: s})
	wantIs(t, "CreateQP on destroyed SRQ", err, verbs.ErrDestroyed)
}

// TestSRQConcurrent posts and pops from several goroutines with the limit
// re-armed all along. Run with -race.
func TestSRQConcurrent(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.EventQueueLen = 1 << 16 })
	s := newSRQ(t, f, 1024, 1)
	f.qpWith(QPInit{Type: verbs.QPTypeRC, SendCQ: f.cq, RecvCQ: f.cq, SRQ: s})
	const each = 2000
	var wg sync.WaitGroup
	var mu sync.Mutex
	popped := 0
	for range 2 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := range each {
				for s.PostRecv(&verbs.RecvWR{ID: uint64(i)}) != nil {
				}
				if i%100 == 0 {
					_ = s.ModifySRQ(verbs.SRQAttr{Limit: 10}, verbs.SRQLimit)
				}
			}
		}()
		go func() {
			defer wg.Done()
			for n := 0; n < each; {
				if _, ok := s.Pop(); ok {
					n++
				}
			}
			mu.Lock()
			popped += each
			mu.Unlock()
		}()
	}
	wg.Wait()
	if popped != 2*each || s.Len() != 0 {
		t.Fatalf("popped %d, left %d", popped, s.Len())
	}
}

func TestRecvQueueZeroAllocPop(t *testing.T) {
	f := newFixture(t)
	s := newSRQ(t, f, 1024, 1)
	postN(t, s, 1000)
	allocs := testing.AllocsPerRun(500, func() {
		s.Pop()
		s.Len()
	})
	if allocs != 0 {
		t.Errorf("Pop allocates %.1f", allocs)
	}
}

// PopFit takes the oldest WQE only if its buffers hold the message: a
// too-small one stays queued (a UD responder drops the datagram without
// consuming it), and the limit event counts only WQEs actually taken.
func TestSRQPopFit(t *testing.T) {
	f := newFixture(t)
	s := newSRQ(t, f, 16, 2)
	for i, n := range []uint32{16, 64} {
		wr := verbs.RecvWR{ID: uint64(i), SGL: []verbs.SGE{{Addr: 0x1000, Length: n / 2}, {Addr: 0x2000, Length: n / 2}}}
		if err := s.PostRecv(&wr); err != nil {
			t.Fatalf("PostRecv: %v", err)
		}
	}
	wantIs(t, "arm 2", s.ModifySRQ(verbs.SRQAttr{Limit: 2}, verbs.SRQLimit), nil)
	if _, ok, fits := s.PopFit(17); !ok || fits || s.Len() != 2 {
		t.Fatalf("PopFit(17) of a 16-byte WQE: ok=%v fits=%v, %d left", ok, fits, s.Len())
	}
	noEvent(t, f.d)
	if wr, ok, fits := s.PopFit(16); !ok || !fits || wr.ID != 0 || s.Len() != 1 {
		t.Fatalf("PopFit(16): %+v ok=%v fits=%v, %d left", wr, ok, fits, s.Len())
	}
	if e := nextEvent(t, f.d); e.Type != verbs.EventSRQLimitReached {
		t.Fatalf("event %v", e.Type)
	}
	s.Pop()
	if _, ok, _ := s.PopFit(1); ok {
		t.Fatal("PopFit of an empty SRQ reported a WQE")
	}
}
