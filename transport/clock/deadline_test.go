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
