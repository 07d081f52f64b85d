package clock

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestVirtualOrderAgainstModel schedules, resets, stops and steps events at
// random and checks that every event runs exactly when a plain sorted list
// of (due time, scheduling order) says it should.
func TestVirtualOrderAgainstModel(t *testing.T) {
	type due struct {
		at  time.Duration
		seq int
		id  int
	}
	rng := rand.New(rand.NewPCG(1, 2))
	v := NewVirtual()
	var fired []int
	var timers []Timer
	model := map[int]due{} // pending events by id
	seq := 0
	schedule := func(id int, d time.Duration) {
		seq++
		model[id] = due{at: v.Now() + d, seq: seq, id: id}
	}
	for round := range 20000 {
		switch op := rng.IntN(10); {
		case op < 4:
			id := len(timers)
			d := time.Duration(rng.IntN(50))
			timers = append(timers, v.AfterFunc(d, func() { fired = append(fired, id) }))
			schedule(id, d)
		case op < 6 && len(timers) > 0:
			id := rng.IntN(len(timers))
			d := time.Duration(rng.IntN(50))
			_, pending := model[id]
			if timers[id].Reset(d) != pending {
				t.Fatalf("round %d: Reset of %d reported pending=%v", round, id, !pending)
			}
			schedule(id, d)
		case op < 7 && len(timers) > 0:
			id := rng.IntN(len(timers))
			_, pending := model[id]
			if timers[id].Stop() != pending {
				t.Fatalf("round %d: Stop of %d reported pending=%v", round, id, !pending)
			}
			delete(model, id)
		default:
			if len(model) == 0 {
				continue
			}
			all := make([]due, 0, len(model))
			for _, d := range model {
				all = append(all, d)
			}
			next := slices.MinFunc(all, func(a, b due) int {
				if a.at != b.at {
					return int(a.at - b.at)
				}
				return a.seq - b.seq
			})
			fired = fired[:0]
			if !v.Step() || len(fired) != 1 || fired[0] != next.id || v.Now() != next.at {
				t.Fatalf("round %d: ran %v at %v, want %d at %v", round, fired, v.Now(), next.id, next.at)
			}
			delete(model, next.id)
		}
		if v.Pending() != len(model) {
			t.Fatalf("round %d: %d pending, model has %d", round, v.Pending(), len(model))
		}
	}
}

func BenchmarkVirtualSchedule(b *testing.B) {
	v := NewVirtual()
	var timers []Timer
	for i := range 1024 { // a busy simulation's pending events
		timers = append(timers, v.AfterFunc(time.Duration(i*97%1000), func() {}))
	}
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		timers[i%len(timers)].Reset(time.Duration(i * 31 % 1000))
		v.Step()
		i++
	}
}
