// Tests of key index placement: the permutation is a bijection of the
// nonzero indices, consecutive registrations land at unrelated indices
// spread over the whole space, a peer that saw one rkey learns nothing about
// its neighbours, and a seeded table replays its keys.

package memory

import (
	"math"
	"math/bits"
	"testing"
)

func TestIndexPermIsBijection(t *testing.T) {
	ks, err := newKeySource(nil)
	if err != nil {
		t.Fatal(err)
	}
	p := newIndexPerm(&ks)
	// The slot the bare network maps to 0 is cycle-walked to another index.
	zero := p.decrypt(0)
	slots := []uint32{1, MaxKeyIndex}
	for s := uint32(2); s <= 1<<20; s++ { // a sixteenth of the space
		slots = append(slots, s)
	}
	// Each slot once: the walked slot is in the range above one time in 16.
	if zero > 1<<20 && zero != MaxKeyIndex {
		slots = append(slots, zero)
	}
	seen := make([]uint64, (MaxKeyIndex+1)/64)
	for _, s := range slots {
		w := p.wire(s)
		if w == 0 || w > MaxKeyIndex {
			t.Fatalf("slot %#x → index %#x, outside [1, 2^24)", s, w)
		}
		if seen[w/64]&(1<<(w%64)) != 0 {
			t.Fatalf("index %#x produced twice", w)
		}
		seen[w/64] |= 1 << (w % 64)
		if back := p.slot(w); back != s {
			t.Fatalf("slot(wire(%#x)) = %#x", s, back)
		}
	}
	if p.slot(0) != 0 {
		t.Fatal("index 0 maps to a slot")
	}
}

// registeredIndices registers n regions and returns their key indices in
// registration order.
func registeredIndices(t *testing.T, tb *Table, n int) []uint32 {
	t.Helper()
	out := make([]uint32, n)
	for i := range out {
		out[i] = KeyIndex(mustRegister(t, tb, 1, make([]byte, 8), 0, RemoteRead).RKey())
	}
	return out
}

// TestKeyIndicesUnpredictable: the indices of consecutive registrations are
// spread uniformly over the 24-bit space and share no relation a peer could
// use (a constant step, a small distance, a few flipped bits). A counter, as
// before, fails every check.
func TestKeyIndicesUnpredictable(t *testing.T) {
	const n = 4096
	idx := registeredIndices(t, newTable(t, Config{}), n)

	// Uniform over the space: 64 buckets by the top 6 bits, chi-square
	// with 63 degrees of freedom (mean 63, sd 11.2; 150 is p < 1e-9).
	var buckets [64]int
	for _, x := range idx {
		buckets[x>>18]++
	}
	chi := 0.0
	for _, c := range buckets {
		d := float64(c) - n/64.0
		chi += d * d / (n / 64.0)
	}
	if chi > 150 {
		t.Errorf("indices not uniform over the space: chi-square %.0f over 64 buckets %v", chi, buckets)
	}

	// Consecutive indices: distances spread (at most a few equal by
	// chance), rarely near each other, about 12 of 24 bits differ.
	steps := map[uint32]int{}
	near, flipped := 0, 0
	for i := 1; i < n; i++ {
		d := (idx[i] - idx[i-1]) & MaxKeyIndex
		steps[d]++
		if d < 1<<12 || d > MaxKeyIndex-1<<12 { // within 4096: p = 2^-11 each
			near++
		}
		flipped += bits.OnesCount32(idx[i] ^ idx[i-1])
	}
	for d, c := range steps {
		if c > 3 {
			t.Errorf("%d of %d consecutive registrations are %#x apart", c, n-1, d)
		}
	}
	if near > 12 { // expected 2
		t.Errorf("%d of %d consecutive indices within 4096 of each other", near, n-1)
	}
	// Expected 12 bits per pair, sd of the mean √6/√4095 ≈ 0.04.
	if mean := float64(flipped) / (n - 1); math.Abs(mean-12) > 0.5 {
		t.Errorf("consecutive indices differ in %.2f bits on average, want 12", mean)
	}
}

// TestNeighbourGuessing: a peer that holds one rkey and tries every key byte
// at the 256 indices around it finds no other live region, where a counting
// allocator handed it nearly all of them.
func TestNeighbourGuessing(t *testing.T) {
	tb := newTable(t, Config{})
	idx := registeredIndices(t, tb, 200)
	seen := idx[100]
	found := 0
	for d := uint32(1); d <= 128; d++ {
		for _, i := range []uint32{seen + d, seen - d} {
			for b := 0; b < 256; b++ {
				key := makeKey(i&MaxKeyIndex, uint8(b))
				if ref, f := tb.CheckRemote(1, 0, key, 0, 1, RemoteRead); f == Ok {
					ref.Release()
					found++
				}
			}
		}
	}
	// 199 other live regions among 2^24 indices: 256 indices hold one
	// with probability 0.3%.
	if found > 1 {
		t.Fatalf("%d live regions found within 128 indices of a known rkey", found)
	}
}

func TestSeededTableReplays(t *testing.T) {
	seed := [32]byte{1, 2, 3}
	keys := func(seed *[32]byte) []uint32 {
		tb := newTable(t, Config{Seed: seed})
		var out []uint32
		for range 50 {
			out = append(out, mustRegister(t, tb, 1, make([]byte, 8), 0, RemoteRead).RKey())
		}
		return out
	}
	a, b, c := keys(&seed), keys(&seed), keys(&[32]byte{1, 2, 4})
	same := 0
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("same seed, key %d: %#x and %#x", i, a[i], b[i])
		}
		if a[i] == c[i] {
			same++
		}
	}
	if same > 1 {
		t.Fatalf("different seeds agree on %d of %d keys", same, len(a))
	}
	if tb := newTable(t, Config{Seed: &seed}); tb.Config().Seed != nil {
		t.Fatal("Config hands the seed out")
	}
}

// TestLookupAllocatesNothing: resolving a key through the permutation
// allocates nothing, hits or misses.
func TestLookupAllocatesNothing(t *testing.T) {
	tb := newTable(t, Config{})
	r := mustRegister(t, tb, 1, make([]byte, 64), 0, RemoteRead)
	key := r.RKey()
	if n := testing.AllocsPerRun(1000, func() {
		if tb.lookup(key) == nil || tb.lookup(key^0x100) != nil {
			panic("lookup")
		}
	}); n != 0 {
		t.Fatalf("%v allocations per lookup", n)
	}
}

// BenchmarkLookup: the cost of resolving a key does not depend on how many
// regions are live (compare the sub-benchmarks).
func BenchmarkLookup(b *testing.B) {
	for _, live := range []int{1, 1 << 16} {
		b.Run(map[int]string{1: "live=1", 1 << 16: "live=65536"}[live], func(b *testing.B) {
			tb, err := NewTable(Config{})
			if err != nil {
				b.Fatal(err)
			}
			keys := make([]uint32, live)
			for i := range keys {
				r, err := tb.Register(1, make([]byte, 8), 0, RemoteRead)
				if err != nil {
					b.Fatal(err)
				}
				keys[i] = r.RKey()
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if tb.lookup(keys[i%live]) == nil {
					b.Fatal("miss")
				}
			}
		})
	}
}

// TestReusedSlotGetsNewIndex: with the default limits (7 generations per
// slot), a region that takes over a freed slot gets a key index unrelated
// to its predecessor's, so an old rkey tells nothing about the new one.
func TestReusedSlotGetsNewIndex(t *testing.T) {
	tb := newTable(t, Config{})
	if tb.gens != 7 {
		t.Fatalf("%d generations with the default limits, want 7", tb.gens)
	}
	const n = 200 // more than reuseAfter, so that slots are reused
	bySlot := map[uint32]uint32{}
	var regs []*Region
	for range n {
		r := mustRegister(t, tb, 1, make([]byte, 8), 0, RemoteRead)
		bySlot[r.index] = KeyIndex(r.RKey())
		regs = append(regs, r)
	}
	for _, r := range regs {
		if err := tb.Deregister(r); err != nil {
			t.Fatal(err)
		}
	}
	reused := 0
	for range n {
		r := mustRegister(t, tb, 1, make([]byte, 8), 0, RemoteRead)
		old, ok := bySlot[r.index]
		if !ok {
			continue
		}
		reused++
		if KeyIndex(r.RKey()) == old {
			t.Fatalf("slot %d reused with its previous key index %#x", r.index, old)
		}
	}
	if reused < n/2 {
		t.Fatalf("only %d of %d registrations reused a slot", reused, n)
	}
}
