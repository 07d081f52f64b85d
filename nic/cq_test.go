package nic

import (
	"strings"
	"sync"
	"testing"

	"github.com/rnic/rnic/nic/verbs"
)

func newCQ(t testing.TB, f *fixture, n int) *CQ {
	t.Helper()
	cq, err := f.d.CreateCQ(n)
	if err != nil {
		t.Fatalf("CreateCQ(%d): %v", n, err)
	}
	return cq
}

func push(t testing.TB, cq *CQ, id uint64, st verbs.WCStatus) {
	t.Helper()
	if !cq.Push(&verbs.WC{WRID: id, Status: st}) {
		t.Fatalf("Push(%d) failed", id)
	}
}

func fired(cq *CQ) bool {
	select {
	case <-cq.Notify():
		return true
	default:
		return false
	}
}

func TestCQFIFOAndWrap(t *testing.T) {
	f := newFixture(t)
	cq := newCQ(t, f, 4)
	if cq.CQE() != 4 {
		t.Fatalf("CQE %d", cq.CQE())
	}
	wcs := make([]verbs.WC, 3)
	next := uint64(0)
	want := uint64(0)
	for round := range 10 {
		for range 3 {
			push(t, cq, next, verbs.WCSuccess)
			next++
		}
		for size := 1 + round%3; cq.Len() > 0; {
			n := cq.Poll(wcs[:size])
			for _, wc := range wcs[:n] {
				if wc.WRID != want {
					t.Fatalf("round %d: polled %d, want %d", round, wc.WRID, want)
				}
				want++
			}
		}
	}
	if want != next {
		t.Fatalf("polled %d of %d", want, next)
	}
	if cq.Poll(wcs) != 0 {
		t.Error("poll on empty CQ returned completions")
	}
	if cq.Poll(nil) != 0 {
		t.Error("poll into nil")
	}
}

// TestCQOverrun: as on Linux rxe, a full CQ loses the completion and
// raises CQ_ERR once for a run of lost completions, and takes the next one
// that finds room; the next run raises CQ_ERR again.
func TestCQOverrun(t *testing.T) {
	f := newFixture(t)
	cq := newCQ(t, f, 2)
	push(t, cq, 1, verbs.WCSuccess)
	push(t, cq, 2, verbs.WCSuccess)
	wantIs(t, "Err before overrun", cq.Err(), nil)
	for id := uint64(3); id <= 4; id++ {
		if cq.Push(&verbs.WC{WRID: id}) {
			t.Fatalf("Push of %d into a full CQ succeeded", id)
		}
	}
	e := nextEvent(t, f.d)
	if e.Type != verbs.EventCQErr || e.CQ != cq {
		t.Fatalf("event %+v", e)
	}
	noEvent(t, f.d) // one event for the run of two
	wantIs(t, "Err after overrun", cq.Err(), verbs.ErrCQOverrun)
	wcs := make([]verbs.WC, 4)
	if n := cq.Poll(wcs[:1]); n != 1 || wcs[0].WRID != 1 {
		t.Fatalf("after overrun polled %d: %v", n, wcs[:n])
	}
	push(t, cq, 5, verbs.WCSuccess) // room again: taken
	if cq.Push(&verbs.WC{WRID: 6}) {
		t.Fatal("Push into a full CQ succeeded")
	}
	if e := nextEvent(t, f.d); e.Type != verbs.EventCQErr || e.CQ != cq {
		t.Fatalf("second overflow: event %+v", e)
	}
	if n := cq.Poll(wcs); n != 2 || wcs[0].WRID != 2 || wcs[1].WRID != 5 {
		t.Fatalf("polled %d: %v, want 2 and 5", n, wcs[:n])
	}
}

// TestCQHolder: a holder's completions count against the capacity until
// it says they are gone.
func TestCQHolder(t *testing.T) {
	f := newFixture(t)
	cq := newCQ(t, f, 2)
	var gone uint32 // what the holder's consumer took
	cq.SetHolder(func(taken uint32) uint32 { return taken - gone })
	push(t, cq, 1, verbs.WCSuccess)
	wcs := make([]verbs.WC, 2)
	if cq.Poll(wcs) != 1 {
		t.Fatal("poll")
	}
	push(t, cq, 2, verbs.WCSuccess) // one held, one in the CQ: full
	if cq.Push(&verbs.WC{WRID: 3}) {
		t.Fatal("Push with one held and one queued in a CQ of 2 succeeded")
	}
	if e := nextEvent(t, f.d); e.Type != verbs.EventCQErr {
		t.Fatalf("event %+v", e)
	}
	gone = 1
	push(t, cq, 4, verbs.WCSuccess)
	if cq.Poll(wcs) != 2 {
		t.Fatal("poll 2")
	}
	gone = 3
	push(t, cq, 5, verbs.WCSuccess)
	gone = 1000 // a consumer index gone wrong: no room
	if cq.Push(&verbs.WC{WRID: 6}) {
		t.Fatal("Push with a holder past capacity succeeded")
	}
}

func TestCQNotify(t *testing.T) {
	f := newFixture(t)
	cq := newCQ(t, f, 16)
	push(t, cq, 1, verbs.WCSuccess)
	if fired(cq) {
		t.Fatal("event without arming")
	}
	wantIs(t, "ReqNotify", cq.ReqNotify(false), nil)
	if fired(cq) {
		t.Fatal("arming fired for a completion already in the CQ")
	}
	push(t, cq, 2, verbs.WCSuccess)
	if !fired(cq) {
		t.Fatal("armed CQ did not fire")
	}
	push(t, cq, 3, verbs.WCSuccess)
	if fired(cq) {
		t.Fatal("fired twice for one arm")
	}

	// Solicited only: successful completions do not fire, errors and
	// solicited ones do.
	wantIs(t, "ReqNotify(solicited)", cq.ReqNotify(true), nil)
	push(t, cq, 4, verbs.WCSuccess)
	if fired(cq) {
		t.Fatal("unsolicited success fired a solicited-only arm")
	}
	push(t, cq, 5, verbs.WCRemAccessErr)
	if !fired(cq) {
		t.Fatal("error completion did not fire a solicited-only arm")
	}
	wantIs(t, "ReqNotify(solicited)", cq.ReqNotify(true), nil)
	push(t, cq, 6, verbs.WCSuccess)
	cq.Solicited()
	if !fired(cq) {
		t.Fatal("solicited completion did not fire")
	}
	cq.Solicited()
	if fired(cq) {
		t.Fatal("Solicited fired a disarmed CQ")
	}

	// Arming for next overrides solicited-only, not the reverse.
	_ = cq.ReqNotify(true)
	_ = cq.ReqNotify(false)
	push(t, cq, 7, verbs.WCSuccess)
	if !fired(cq) {
		t.Fatal("next-completion arm did not override solicited-only")
	}
	_ = cq.ReqNotify(false)
	_ = cq.ReqNotify(true)
	push(t, cq, 8, verbs.WCSuccess)
	if !fired(cq) {
		t.Fatal("solicited-only arm downgraded a next-completion arm")
	}

	// Events coalesce while unconsumed.
	_ = cq.ReqNotify(false)
	push(t, cq, 9, verbs.WCSuccess)
	_ = cq.ReqNotify(false)
	push(t, cq, 10, verbs.WCSuccess)
	if !fired(cq) || fired(cq) {
		t.Fatal("two unconsumed events did not coalesce into one")
	}
}

func TestCQResize(t *testing.T) {
	f := newFixture(t)
	cq := newCQ(t, f, 4)
	wcs := make([]verbs.WC, 4)
	push(t, cq, 0, verbs.WCSuccess)
	push(t, cq, 1, verbs.WCSuccess)
	cq.Poll(wcs[:1])
	push(t, cq, 2, verbs.WCSuccess)
	push(t, cq, 3, verbs.WCSuccess)
	push(t, cq, 4, verbs.WCSuccess) // wrapped
	wantIs(t, "resize below count", cq.Resize(3), verbs.ErrInvalid)
	wantIs(t, "resize above max", cq.Resize(f.d.Query().MaxCQE+1), verbs.ErrInvalid)
	wantIs(t, "resize", cq.Resize(8), nil)
	if cq.CQE() != 8 {
		t.Fatalf("CQE %d after resize", cq.CQE())
	}
	for i := uint64(5); i < 9; i++ {
		push(t, cq, i, verbs.WCSuccess)
	}
	wcs = make([]verbs.WC, 10)
	n := cq.Poll(wcs)
	if n != 8 {
		t.Fatalf("polled %d", n)
	}
	for i, wc := range wcs[:n] {
		if wc.WRID != uint64(i+1) {
			t.Fatalf("order after resize: %v", wcs[:n])
		}
	}
}

func TestCQDestroy(t *testing.T) {
	f := newFixture(t)
	cq := newCQ(t, f, 4)
	rcq := newCQ(t, f, 4)
	q, _ := f.qpWith(QPInit{Type: verbs.QPTypeRC, SendCQ: cq, RecvCQ: rcq})
	wantIs(t, "destroy send CQ in use", cq.Destroy(), verbs.ErrBusy)
	wantIs(t, "destroy recv CQ in use", rcq.Destroy(), verbs.ErrBusy)
	wantIs(t, "destroy QP", q.Destroy(), nil)
	wantIs(t, "destroy CQ", cq.Destroy(), nil)
	wantIs(t, "destroy CQ twice", cq.Destroy(), verbs.ErrDestroyed)
	wantIs(t, "ReqNotify on destroyed", cq.ReqNotify(false), verbs.ErrDestroyed)
	_, err := f.d.CreateQP(f.pd, QPInit{Type: verbs.QPTypeRC, SendCQ: cq, RecvCQ: rcq})
	wantIs(t, "CreateQP with destroyed CQ", err, verbs.ErrDestroyed)
	wantIs(t, "destroy recv CQ", rcq.Destroy(), nil)
}

// TestCQConcurrent pushes from several engine goroutines while the
// application polls; each producer's completions must come out in its
// order, none lost. Run with -race.
func TestCQConcurrent(t *testing.T) {
	f := newFixture(t)
	const producers, each = 4, 5000
	cq := newCQ(t, f, 64)
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				wc := verbs.WC{QPN: uint32(p), WRID: uint64(i)}
				for !cq.Push(&wc) {
					t.Error("overrun")
					return
				}
				for cq.Len() > 48 { // stay clear of overrun: a real app sizes its CQ
					_ = cq.ReqNotify(false) // exercise arming concurrently
				}
			}
		}()
	}
	next := make([]uint64, producers)
	wcs := make([]verbs.WC, 7)
	for got := 0; got < producers*each; {
		n := cq.Poll(wcs)
		for _, wc := range wcs[:n] {
			if wc.WRID != next[wc.QPN] {
				t.Fatalf("producer %d: got %d, want %d", wc.QPN, wc.WRID, next[wc.QPN])
			}
			next[wc.QPN]++
		}
		got += n
	}
	wg.Wait()
	wantIs(t, "Err", cq.Err(), nil)
}

func TestCQZeroAlloc(t *testing.T) {
	f := newFixture(t)
	cq := newCQ(t, f, 16)
	wc := verbs.WC{WRID: 1, Status: verbs.WCSuccess}
	wcs := make([]verbs.WC, 4)
	_ = cq.ReqNotify(false)
	allocs := testing.AllocsPerRun(1000, func() {
		cq.Push(&wc)
		cq.Push(&wc)
		cq.Solicited()
		cq.Poll(wcs)
	})
	if allocs != 0 {
		t.Errorf("Push/Poll allocate %.1f times per run", allocs)
	}
}

func BenchmarkCQPushPoll(b *testing.B) {
	f := newFixture(b)
	cq := newCQ(b, f, 256)
	wc := verbs.WC{WRID: 1}
	wcs := make([]verbs.WC, 16)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		cq.Push(&wc)
		if i%16 == 15 {
			cq.Poll(wcs)
		}
	}
}

// TestCQSetFire: an armed CQ with a fire function calls it on the pushing
// goroutine, in push order across CQs, and sends nothing on Notify; a
// disarmed CQ calls nothing.
func TestCQSetFire(t *testing.T) {
	f := newFixture(t)
	a, b := newCQ(t, f, 4), newCQ(t, f, 4)
	var order []string
	a.SetFire(func() { order = append(order, "a") })
	b.SetFire(func() { order = append(order, "b") })
	for _, cq := range []*CQ{a, b} {
		if err := cq.ReqNotify(false); err != nil {
			t.Fatal(err)
		}
	}
	push(t, b, 1, verbs.WCSuccess)
	push(t, a, 2, verbs.WCSuccess)
	if strings.Join(order, "") != "ba" {
		t.Errorf("fired %v, want b then a", order)
	}
	if fired(a) || fired(b) {
		t.Error("a CQ with a fire function also sent on Notify")
	}
	if err := a.ReqNotify(false); err != nil {
		t.Fatal(err)
	}
	a.Disarm()
	push(t, a, 3, verbs.WCSuccess)
	a.Solicited()
	if len(order) != 2 {
		t.Errorf("a disarmed CQ fired: %v", order)
	}
}
