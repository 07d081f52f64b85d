// Tests of fault injection on the simulated link: random faults happen at
// about their configured rates and do what they claim, and scripted
// verdicts do exactly what they say.

package transport_test

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/rnic/rnic/transport"
	"github.com/rnic/rnic/transport/clock"
)

// within reports whether got is within ±tol (relative) of want.
func within(got uint64, want, tol float64) bool {
	return float64(got) >= want*(1-tol) && float64(got) <= want*(1+tol)
}

func TestRandomFaultRates(t *testing.T) {
	const n = 10000
	f := transport.Faults{
		Loss: 0.10, Dup: 0.05, Corrupt: 0.05, Reorder: 0.05,
		Delay: 0.02, DelayMin: time.Microsecond, DelayMax: 3 * time.Microsecond,
	}
	clk := clock.NewVirtual()
	a, b := transport.NewSimLink(clk, transport.SimConfig{Seed: 7, Faults: transport.FaultConfig{AtoB: f}})
	got := recorder(clk, b)
	sent := map[string]uint32{}
	for i := range n {
		fr := mkFrame(uint32(i), 64+i%64)
		sent[string(fr)] = uint32(i)
		// One frame per µs, so a frame held back by up to 10µs is overtaken.
		clk.AfterFunc(time.Duration(i)*time.Microsecond, func() { _ = a.Send(fr) })
	}
	clk.Run(nil)

	st := a.Stats()
	checkConservation(t, "AtoB", st)
	survivors := n * (1 - f.Loss)
	for _, c := range []struct {
		name string
		got  uint64
		want float64
	}{
		{"Dropped", st.Dropped, n * f.Loss},
		{"Duplicated", st.Duplicated, survivors * f.Dup},
		{"Corrupted", st.Corrupted, survivors * f.Corrupt},
		{"Reordered", st.Reordered, survivors * f.Reorder},
		{"Delayed", st.Delayed, survivors * f.Delay},
	} {
		if !within(c.got, c.want, 0.3) {
			t.Errorf("%s = %d, want about %.0f", c.name, c.got, c.want)
		}
	}
	if st.Sent != n || uint64(len(*got)) != st.Delivered {
		t.Errorf("Sent = %d, receiver saw %d, stats = %+v", st.Sent, len(*got), st)
	}

	// Check the effects, not just the counters.
	var corrupted, late int
	copies := map[uint32]int{}
	lateIDs := map[uint32]bool{}
	maxSeen := -1
	for _, g := range *got {
		id, ok := sent[g.data]
		if !ok {
			// Must be exactly one bit away from a frame that was sent.
			id, ok = oneBitFrom(sent, []byte(g.data))
			if !ok {
				t.Fatalf("delivered a frame that was never sent and is not a one-bit corruption")
			}
			if copies[id] == 0 {
				corrupted++
			}
		}
		copies[id]++
		if int(id) < maxSeen {
			lateIDs[id] = true
		}
		maxSeen = max(maxSeen, int(id))
	}
	late = len(lateIDs)
	if uint64(corrupted) != st.Corrupted {
		t.Errorf("saw %d corrupted frames, counter says %d", corrupted, st.Corrupted)
	}
	dups := 0
	for _, c := range copies {
		if c > 2 {
			t.Fatalf("a frame arrived %d times", c)
		}
		if c == 2 {
			dups++
		}
	}
	if uint64(dups) != st.Duplicated {
		t.Errorf("saw %d duplicated frames, counter says %d", dups, st.Duplicated)
	}
	if uint64(n-len(copies)) != st.Dropped {
		t.Errorf("%d frames never arrived, counter says %d dropped", n-len(copies), st.Dropped)
	}
	// Only held-back frames can arrive after a later one; most of them do.
	if uint64(late) > st.Reordered || uint64(late) < st.Reordered/2 {
		t.Errorf("%d frames arrived late, %d were reordered", late, st.Reordered)
	}
	t.Logf("stats %+v, late %d", st, late)

	// The other direction had no faults and drew nothing.
	if st := b.Stats(); st != (transport.Counters{}) {
		t.Errorf("BtoA stats = %+v, want zero", st)
	}
}

// oneBitFrom finds the sent frame that g differs from by exactly one bit.
func oneBitFrom(sent map[string]uint32, g []byte) (uint32, bool) {
	c := slices.Clone(g)
	for i := range len(c) * 8 {
		c[i/8] ^= 1 << (i % 8)
		if id, ok := sent[string(c)]; ok {
			return id, true
		}
		c[i/8] ^= 1 << (i % 8)
	}
	return 0, false
}

func TestScriptedVerdicts(t *testing.T) {
	replacement := mkFrame(800, 100)
	var calls []string
	script := func(dir transport.Direction, index int, frame []byte) transport.Verdict {
		if dir != transport.AtoB {
			t.Errorf("script called for %v", dir)
		}
		if frameID(frame) != uint32(index) {
			t.Errorf("index %d given with frame %d", index, frameID(frame))
		}
		var v transport.Verdict
		switch index {
		case 2:
			v = transport.Drop()
		case 4:
			v = transport.Duplicate()
		case 6:
			v = transport.Delay(5 * time.Microsecond)
		case 8:
			v = transport.Replace(replacement)
		}
		calls = append(calls, v.String())
		return v
	}
	clk := clock.NewVirtual()
	a, b := transport.NewSimLink(clk, transport.SimConfig{Faults: transport.FaultConfig{Script: script}})
	got := recorder(clk, b)
	for i := range 10 {
		_ = a.Send(mkFrame(uint32(i), 64))
	}
	clk.Run(nil)

	lat := transport.DefaultLatency
	want := []arrival{
		{lat, string(mkFrame(0, 64))},
		{lat, string(mkFrame(1, 64))},
		{lat, string(mkFrame(3, 64))},
		{lat, string(mkFrame(4, 64))},
		{lat, string(mkFrame(4, 64))},
		{lat, string(mkFrame(5, 64))},
		{lat, string(mkFrame(7, 64))},
		{lat, string(replacement)},
		{lat, string(mkFrame(9, 64))},
		{lat + 5*time.Microsecond, string(mkFrame(6, 64))},
	}
	if !slices.Equal(*got, want) {
		for _, g := range *got {
			t.Logf("got id %d at %v", g.id(), g.at)
		}
		t.Fatal("scripted run delivered the wrong frames")
	}
	if len(calls) != 10 || calls[2] != "drop" || calls[4] != "duplicate" || calls[6] != "delay 5µs" || calls[8] != "replace (100 bytes)" {
		t.Errorf("script calls: %q", calls)
	}
	st := a.Stats()
	if st.Dropped != 1 || st.Duplicated != 1 || st.Delayed != 1 || st.Replaced != 1 || st.Delivered != 10 {
		t.Errorf("stats = %+v", st)
	}
	checkConservation(t, "AtoB", st)
}

// A non-Pass verdict is the whole story: random faults do not touch it.
func TestScriptOverridesRandomFaults(t *testing.T) {
	clk := clock.NewVirtual()
	var a *transport.SimEndpoint
	script := func(_ transport.Direction, index int, _ []byte) transport.Verdict {
		_ = a.Stats() // a script may look at the link without deadlocking
		if index == 0 {
			return transport.Duplicate()
		}
		return transport.Pass()
	}
	a, b := transport.NewSimLink(clk, transport.SimConfig{Faults: transport.FaultConfig{
		AtoB: transport.Faults{Loss: 1}, Script: script,
	}})
	got := recorder(clk, b)
	for i := range 5 {
		_ = a.Send(mkFrame(uint32(i), 64))
	}
	clk.Run(nil)
	if len(*got) != 2 || (*got)[0].id() != 0 || (*got)[1].id() != 0 {
		t.Fatalf("got %d frames, want frame 0 twice and the rest lost", len(*got))
	}
}

// The script may rewrite the frame it is given in place.
func TestScriptRewritesInPlace(t *testing.T) {
	clk := clock.NewVirtual()
	a, b := transport.NewSimLink(clk, transport.SimConfig{Faults: transport.FaultConfig{
		Script: func(_ transport.Direction, _ int, f []byte) transport.Verdict {
			f[20] ^= 0xff
			return transport.Replace(f)
		},
	}})
	got := recorder(clk, b)
	orig := mkFrame(1, 64)
	_ = a.Send(orig)
	clk.Run(nil)
	want := mkFrame(1, 64)
	want[20] ^= 0xff
	if len(*got) != 1 || (*got)[0].data != string(want) {
		t.Fatal("rewritten frame not delivered")
	}
	if !bytes.Equal(orig, mkFrame(1, 64)) {
		t.Fatal("script rewrote the caller's buffer")
	}
}

func TestReplaceWithEmptyDrops(t *testing.T) {
	clk := clock.NewVirtual()
	a, b := transport.NewSimLink(clk, transport.SimConfig{Faults: transport.FaultConfig{
		Script: func(transport.Direction, int, []byte) transport.Verdict { return transport.Replace(nil) },
	}})
	got := recorder(clk, b)
	_ = a.Send(mkFrame(1, 64))
	clk.Run(nil)
	if st := a.Stats(); len(*got) != 0 || st.Dropped != 1 || st.Replaced != 1 {
		t.Errorf("got %d frames, stats %+v", len(*got), st)
	}
}

// Delay stalls the direction: the frames behind a delayed frame wait for
// it, so order is kept.
func TestDelayKeepsOrder(t *testing.T) {
	clk := clock.NewVirtual()
	a, b := transport.NewSimLink(clk, transport.SimConfig{Seed: 3, Faults: transport.FaultConfig{
		AtoB: transport.Faults{Delay: 0.2, DelayMin: 2 * time.Microsecond, DelayMax: 10 * time.Microsecond},
	}})
	got := recorder(clk, b)
	for i := range 1000 {
		clk.AfterFunc(time.Duration(i)*500*time.Nanosecond, func() { _ = a.Send(mkFrame(uint32(i), 64)) })
	}
	clk.Run(nil)
	if len(*got) != 1000 {
		t.Fatalf("delivered %d", len(*got))
	}
	var slow int
	for i, g := range *got {
		if g.id() != uint32(i) {
			t.Fatalf("arrival %d is frame %d", i, g.id())
		}
		if g.at-time.Duration(i)*500*time.Nanosecond > transport.DefaultLatency {
			slow++
		}
	}
	if st := a.Stats(); st.Delayed < 100 || slow <= int(st.Delayed) {
		t.Errorf("delayed %d, frames slower than the base latency %d: a stall should hold frames behind it", st.Delayed, slow)
	}
}

func TestVerdictDelayNonPositiveIsPass(t *testing.T) {
	if v := transport.Delay(0); v.String() != "pass" {
		t.Errorf("Delay(0) = %v", v)
	}
}
