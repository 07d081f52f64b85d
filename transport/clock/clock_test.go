package clock

import (
	"testing"
	"time"
)

func TestVirtualOrder(t *testing.T) {
	v := NewVirtual()
	var got []int
	v.AfterFunc(2*time.Millisecond, func() { got = append(got, 3) })
	v.AfterFunc(time.Millisecond, func() { got = append(got, 1) })
	v.AfterFunc(time.Millisecond, func() { got = append(got, 2) }) // same instant: FIFO
	if n := v.Run(nil); n != 3 {
		t.Fatalf("ran %d events", n)
	}
	if len(got) != 3 || got[0] != 1 || got[1] != 2 || got[2] != 3 {
		t.Fatalf("order %v", got)
	}
	if v.Now() != 2*time.Millisecond {
		t.Fatalf("now %v", v.Now())
	}
}

func TestVirtualStopReset(t *testing.T) {
	v := NewVirtual()
	n := 0
	tm := v.AfterFunc(time.Second, func() { n++ })
	if !tm.Stop() || tm.Stop() {
		t.Fatal("Stop should report pending once")
	}
	v.Run(nil)
	if n != 0 {
		t.Fatal("stopped timer ran")
	}
	if tm.Reset(time.Millisecond) {
		t.Fatal("Reset of a stopped timer reported pending")
	}
	if !tm.Reset(3 * time.Millisecond) {
		t.Fatal("Reset of a pending timer reported not pending")
	}
	v.Run(nil)
	if n != 1 || v.Now() != 3*time.Millisecond {
		t.Fatalf("n=%d now=%v", n, v.Now())
	}
	// Reset after running reschedules without allocating.
	if a := testing.AllocsPerRun(100, func() { tm.Reset(time.Microsecond); v.Step() }); a != 0 {
		t.Fatalf("%v allocations per Reset", a)
	}
	// Reset(0) runs after events already due now.
	var order []string
	v.AfterFunc(0, func() { order = append(order, "first") })
	tm2 := v.AfterFunc(time.Hour, func() { order = append(order, "reset") })
	tm2.Reset(0)
	v.Run(nil)
	if len(order) != 2 || order[0] != "first" {
		t.Fatalf("order %v", order)
	}
}

func TestRunForNeverGoesBack(t *testing.T) {
	v := NewVirtual()
	v.RunFor(time.Second)
	v.RunFor(-time.Hour)
	if v.Now() != time.Second {
		t.Fatalf("now %v", v.Now())
	}
}

func TestReal(t *testing.T) {
	r := NewReal()
	done := make(chan struct{})
	tm := r.AfterFunc(time.Hour, func() { close(done) })
	tm.Reset(time.Millisecond)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("real timer did not fire after Reset")
	}
	if r.Now() <= 0 {
		t.Fatal("real clock does not advance")
	}
}

// TestVirtualNewTimer: a timer from NewTimer is not pending until Reset,
// and then runs once, in sequence with AfterFunc's events.
func TestVirtualNewTimer(t *testing.T) {
	v := NewVirtual()
	var got []string
	tm := v.NewTimer(func() { got = append(got, "timer") })
	if v.Pending() != 0 || v.Step() {
		t.Fatal("a new timer is pending before Reset")
	}
	v.AfterFunc(time.Millisecond, func() { got = append(got, "before") })
	if tm.Reset(time.Millisecond) {
		t.Error("Reset of a new timer says it was pending")
	}
	v.Run(nil)
	if len(got) != 2 || got[0] != "before" || got[1] != "timer" {
		t.Errorf("ran %v, want [before timer]", got)
	}
}
