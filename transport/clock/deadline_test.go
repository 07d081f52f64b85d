package clock

import (
	"sync"
	"testing"
	"time"
)

func TestDeadline(t *testing.T) {
	v := NewVirtual()
	var mu sync.Mutex
	var fired []time.Duration
	var d Deadline
	d.Init(v, mu.Lock, mu.Unlock, func() { fired = append(fired, v.Now()) })
	mu.Lock()
	d.Set(10 * time.Millisecond)
	mu.Unlock()
	v.RunFor(5 * time.Millisecond)
	mu.Lock()
	d.Set(10 * time.Millisecond) // moved later: fires at 15ms, not 10ms
	mu.Unlock()
	v.Run(nil)
	if len(fired) != 1 || fired[0] != 15*time.Millisecond {
		t.Fatalf("fired at %v, want once at 15ms", fired)
	}
	mu.Lock()
	d.Set(time.Millisecond)
	d.Stop()
	active := d.Active()
	mu.Unlock()
	v.Run(nil)
	if active || len(fired) != 1 {
		t.Fatalf("a stopped deadline fired (%v) or stayed active", fired)
	}
	// Restarting allocates nothing once the timer exists.
	if a := testing.AllocsPerRun(100, func() {
		mu.Lock()
		d.Set(time.Microsecond)
		mu.Unlock()
		v.Run(nil)
	}); a != 0 {
		t.Fatalf("%v allocations per restart", a)
	}
}

// countingClock counts the timer operations of a Deadline.
type countingClock struct {
	*Virtual
	arms, stops int
}

type countingTimer struct {
	Timer
	c *countingClock
}

func (c *countingClock) AfterFunc(d time.Duration, f func()) Timer {
	c.arms++
	return countingTimer{c.Virtual.AfterFunc(d, f), c}
}

func (t countingTimer) Reset(d time.Duration) bool { t.c.arms++; return t.Timer.Reset(d) }
func (t countingTimer) Stop() bool                 { t.c.stops++; return t.Timer.Stop() }

// TestDeadlineLazyTimer: a request's ACK timer, set at each send and
// stopped at each ACK of a ping-pong, arms the clock's timer once, not at
// every Set and Stop; a deadline moved earlier than the armed timer still
// fires on time, and one moved later fires at its new time.
func TestDeadlineLazyTimer(t *testing.T) {
	c := &countingClock{Virtual: NewVirtual()}
	var mu sync.Mutex
	var fired []time.Duration
	var d Deadline
	d.Init(c, mu.Lock, mu.Unlock, func() { fired = append(fired, c.Now()) })
	for range 1000 { // round trips of 1µs, well inside the 10ms timeout
		mu.Lock()
		d.Set(10 * time.Millisecond)
		mu.Unlock()
		c.RunFor(time.Microsecond)
		mu.Lock()
		d.Stop()
		mu.Unlock()
	}
	if c.arms != 1 || c.stops != 0 {
		t.Errorf("1000 Set+Stop: %d timer arms, %d stops; want 1 and 0", c.arms, c.stops)
	}
	c.Run(nil) // the stale callback finds the deadline stopped
	if len(fired) != 0 {
		t.Fatalf("a stopped deadline fired at %v", fired)
	}
	start := c.Now()
	mu.Lock()
	d.Set(10 * time.Millisecond)
	mu.Unlock()
	c.RunFor(2 * time.Millisecond)
	mu.Lock()
	d.Set(10 * time.Millisecond) // later: due at 12ms, the timer calls back at 10ms first
	mu.Unlock()
	c.Run(nil)
	mu.Lock()
	d.Set(5 * time.Millisecond)
	mu.Unlock()
	c.RunFor(time.Millisecond)
	mu.Lock()
	d.Set(time.Millisecond) // earlier than the armed timer: re-armed
	mu.Unlock()
	c.Run(nil)
	want := []time.Duration{start + 12*time.Millisecond, start + 14*time.Millisecond}
	if len(fired) != 2 || fired[0] != want[0] || fired[1] != want[1] {
		t.Fatalf("fired at %v, want %v", fired, want)
	}
}
