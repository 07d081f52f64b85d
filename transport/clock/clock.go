// Package clock gives engines their notion of time.
//
// Engines never read the wall clock: they ask a Clock (nic/README.md,
// principle 1). With the Virtual clock every retry, RNR wait and timeout of
// a simulated run happens in a deterministic order and takes no wall time;
// with Real the same engine code runs against time.Now and time.AfterFunc.
package clock

import (
	"sync"
	"time"
)

// Clock is the source of time and timers for an engine.
type Clock interface {
	// Now is the time elapsed since the clock's epoch.
	Now() time.Duration
	// AfterFunc arranges for f to run once d has elapsed. Whether f runs on
	// its own goroutine (Real) or inside Virtual.Run is the clock's business;
	// callers must not assume either.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc.
type Timer interface {
	// Stop cancels the timer; it reports whether the call prevented f from
	// running.
	Stop() bool
	// Reset makes the timer run its function once d from now, whether it
	// already ran, is pending or was stopped; it reports whether it was
	// pending. Unlike a new AfterFunc it allocates nothing, so engines
	// restart timers on their hot paths with it.
	Reset(d time.Duration) bool
}

// Real is the wall clock, with its epoch at creation.
type Real struct{ start time.Time }

// NewReal returns a wall clock whose epoch is now.
func NewReal() *Real { return &Real{start: time.Now()} }

// Now implements Clock.
func (r *Real) Now() time.Duration { return time.Since(r.start) }

// AfterFunc implements Clock; f runs on its own goroutine.
func (r *Real) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// Virtual is a discrete-event clock. Time moves only when Run, RunFor or Step
// is called, jumping straight to the next pending event. Events due at the
// same instant run in the order they were scheduled, so a run is a pure
// function of its inputs.
//
// Virtual is safe for concurrent use, but determinism holds only when all
// scheduling happens from the goroutine that runs the clock (callbacks
// included), as in the simulated mode.
type Virtual struct {
	mu     sync.Mutex
	now    time.Duration
	seq    uint64
	events eventHeap
}

// NewVirtual returns a virtual clock at time zero.
func NewVirtual() *Virtual { return &Virtual{} }

// Now implements Clock.
func (v *Virtual) Now() time.Duration {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.now
}

// AfterFunc implements Clock. A negative d is treated as zero.
func (v *Virtual) AfterFunc(d time.Duration, f func()) Timer {
	if d < 0 {
		d = 0
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.seq++
	e := &event{at: v.now + d, seq: v.seq, f: f, clock: v}
	v.events.push(e)
	return e
}

// NewTimer returns a timer for f that is not pending: Reset schedules it.
// AfterFunc's timer is in the event heap before its caller has it, so
// another goroutine running the clock may fire it first; a caller that
// keeps the timer where the callback looks creates it so instead.
func (v *Virtual) NewTimer(f func()) Timer { return &event{f: f, index: -1, clock: v} }

// Pending reports how many events are scheduled.
func (v *Virtual) Pending() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.events)
}

// Step runs the earliest pending event, advancing time to it. It reports
// false when nothing is pending.
func (v *Virtual) Step() bool {
	v.mu.Lock()
	if len(v.events) == 0 {
		v.mu.Unlock()
		return false
	}
	e := v.events.pop()
	if e.at > v.now {
		v.now = e.at
	}
	f := e.f
	v.mu.Unlock()
	f()
	return true
}

// Run runs events until none is pending or stop returns true (stop may be
// nil). It returns the number of events run.
func (v *Virtual) Run(stop func() bool) int {
	n := 0
	for (stop == nil || !stop()) && v.Step() {
		n++
	}
	return n
}

// RunFor runs every event due within d from now, then sets the time to
// now+d. It returns the number of events run.
func (v *Virtual) RunFor(d time.Duration) int {
	if d < 0 {
		d = 0 // time never runs backwards
	}
	v.mu.Lock()
	end := v.now + d
	v.mu.Unlock()
	n := 0
	for {
		v.mu.Lock()
		if len(v.events) == 0 || v.events[0].at > end {
			v.now = end
			v.mu.Unlock()
			return n
		}
		v.mu.Unlock()
		v.Step()
		n++
	}
}

type event struct {
	at    time.Duration
	seq   uint64
	f     func()
	index int
	clock *Virtual
}

// Reset implements Timer. The event is (re)scheduled with a fresh sequence
// number, so it runs after every event already due at the same instant.
func (e *event) Reset(d time.Duration) bool {
	if d < 0 {
		d = 0
	}
	v := e.clock
	v.mu.Lock()
	defer v.mu.Unlock()
	v.seq++
	e.at, e.seq = v.now+d, v.seq
	if e.index >= 0 {
		v.events.fix(e.index)
		return true
	}
	v.events.push(e)
	return false
}

// Stop implements Timer.
func (e *event) Stop() bool {
	v := e.clock
	v.mu.Lock()
	defer v.mu.Unlock()
	if e.index < 0 {
		return false
	}
	v.events.remove(e.index)
	return true
}
