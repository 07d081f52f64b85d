package nap

import (
	"testing"
	"time"
)

func newTimer(t testing.TB) *Timer {
	tm, err := New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tm.Close() })
	return tm
}

// A nap lasts at least what was asked (the kernel's timer never fires
// early), however short.
func TestNapLastsItsDuration(t *testing.T) {
	tm := newTimer(t)
	for _, d := range []time.Duration{0, time.Microsecond, 20 * time.Microsecond, 300 * time.Microsecond, 2 * time.Millisecond} {
		for range 20 {
			t0 := time.Now()
			if err := tm.Nap(d); err != nil {
				t.Fatal(err)
			}
			if got := time.Since(t0); got < d {
				t.Fatalf("Nap(%v) returned after %v", d, got)
			}
		}
	}
}

func TestNapAllocatesNothing(t *testing.T) {
	tm := newTimer(t)
	if n := testing.AllocsPerRun(100, func() { tm.Nap(20 * time.Microsecond) }); n != 0 {
		t.Errorf("%v allocations per nap", n)
	}
}

func TestNapAfterClose(t *testing.T) {
	tm, err := New()
	if err != nil {
		t.Fatal(err)
	}
	tm.Close()
	if err := tm.Nap(time.Microsecond); err == nil {
		t.Error("Nap on a closed Timer succeeded")
	}
}

// The two ways to wait 20 µs, for comparison (ns/op is the real wait):
//
//	go test -run '^$' -bench . ./internal/nap
func BenchmarkNap20us(b *testing.B) {
	tm := newTimer(b)
	for b.Loop() {
		tm.Nap(20 * time.Microsecond)
	}
}

func BenchmarkSleep20us(b *testing.B) {
	for b.Loop() {
		time.Sleep(20 * time.Microsecond)
	}
}
