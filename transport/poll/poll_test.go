package poll

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

func TestPollerPollsForTimeAfterAPacket(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("GOMAXPROCS=1: no reader may poll (TestNoPollingOnOneP checks that)")
	}
	var p Poller
	if p.Again() {
		t.Fatal("a reader that has received nothing polls")
	}
	start := time.Now()
	p.Received()
	turns := 0
	for p.Again() {
		turns++
		if Polling() != 1 {
			t.Fatalf("polling %d readers, want 1", Polling())
		}
	}
	if d := time.Since(start); d < Time || turns == 0 { // the window starts at Received, after start
		t.Errorf("polled %d turns for %v; want about %v", turns, d, Time)
	}
	if Polling() != 0 {
		t.Errorf("the slot is still held after the reader parked (%d)", Polling())
	}
}

func TestAtMostGOMAXPROCSMinusOnePoll(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(3))
	ps := make([]Poller, 4)
	got := 0
	for i := range ps {
		ps[i].Received()
		if ps[i].Again() {
			got++
		}
	}
	if got != 2 || Polling() != 2 {
		t.Errorf("%d readers poll (counted %d) with GOMAXPROCS=3; want 2", got, Polling())
	}
	ps[0].Release()
	ps[1].Release()
	if !ps[2].Again() && !ps[3].Again() {
		t.Error("a released slot is not taken again")
	}
	for i := range ps {
		ps[i].Release()
	}
	if Polling() != 0 {
		t.Errorf("slots held after every reader released: %d", Polling())
	}
}

func TestNoPollingOnOneP(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var p Poller
	p.Received()
	if p.Again() {
		p.Release()
		t.Error("a reader polls with GOMAXPROCS=1: it would hold the only P")
	}
}

// TestPollerYieldsToAWaitingGoroutine: a goroutine readied while the
// other P is busy waits for the poller's P; the poller lets it run within
// its window rather than at the window's end. Without the yield it never
// runs while the poller polls (the busy P does not steal), so a try
// that fails is one whose poller was off the CPU for its whole window;
// one of many must succeed.
func TestPollerYieldsToAWaitingGoroutine(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	var stop, busy atomic.Bool
	go func() { // holds the other P
		busy.Store(true)
		for !stop.Load() {
		}
	}()
	defer stop.Store(true)
	for !busy.Load() {
		runtime.Gosched()
	}
	const tries = 20
	ranWithin := 0
	for range tries {
		var ran atomic.Bool
		var p Poller
		p.Received()
		go func() { ran.Store(true) }()
		for !ran.Load() && p.Again() {
		}
		if ran.Load() {
			ranWithin++
		}
		p.Release()
		for !ran.Load() { // let it finish before the next try
			runtime.Gosched()
		}
	}
	if ranWithin == 0 {
		t.Errorf("a goroutine waiting for the poller's P ran within the window in none of %d tries", tries)
	}
}

func TestLookingAtTheRunQueuesDoesNotAllocate(t *testing.T) {
	var p Poller
	p.yieldIfQueued()
	if n := testing.AllocsPerRun(100, p.yieldIfQueued); n != 0 {
		t.Errorf("%v allocations per look", n)
	}
}
