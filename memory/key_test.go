// Tests of the key layout, key unpredictability and stale keys on slot
// reuse.

package memory

import (
	"testing"
)

func TestKeyLayout(t *testing.T) {
	k := makeKey(0xabcdef, 0x12)
	if k != 0xabcdef12 || KeyIndex(k) != 0xabcdef || KeyByte(k) != 0x12 {
		t.Fatalf("makeKey = %#x", k)
	}
	tb := newTable(t, Config{})
	r := mustRegister(t, tb, 1, make([]byte, 64), 0x1000, LocalWrite)
	if r.LKey() != r.RKey() {
		t.Errorf("lkey %#x != rkey %#x", r.LKey(), r.RKey())
	}
	if KeyIndex(r.LKey()) == 0 {
		t.Error("index 0 used")
	}
	// Index 0 never resolves, whatever the key byte.
	for b := 0; b < 256; b++ {
		if _, f := tb.CheckLocal(1, uint32(b), 0x1000, 1, 0); f != BadKey {
			t.Fatalf("key %#x: %v, want bad key", b, f)
		}
	}
}

func TestKeyUnpredictable(t *testing.T) {
	tb := newTable(t, Config{})
	const n = 1000
	bytes := make([]uint8, n)
	for i := range bytes {
		r := mustRegister(t, tb, 1, make([]byte, 8), 0, 0)
		bytes[i] = KeyByte(r.LKey())
	}
	// Not a constant, not an arithmetic progression (mod 256), and spread
	// over the byte space: 1000 uniform draws hit ~251 of 256 values.
	distinct := map[uint8]bool{}
	constStep := true
	for i := range bytes {
		distinct[bytes[i]] = true
		if i >= 2 && bytes[i]-bytes[i-1] != bytes[1]-bytes[0] {
			constStep = false
		}
	}
	if constStep {
		t.Errorf("key bytes form an arithmetic sequence: % x", bytes[:16])
	}
	if len(distinct) < 200 {
		t.Errorf("only %d distinct key bytes in %d registrations", len(distinct), n)
	}
	// Two tables seeded independently do not produce the same sequence.
	tb2 := newTable(t, Config{})
	same := 0
	for i := 0; i < 64; i++ {
		r := mustRegister(t, tb2, 1, make([]byte, 8), 0, 0)
		if KeyByte(r.LKey()) == bytes[i] {
			same++
		}
	}
	if same > 16 {
		t.Errorf("two tables agree on %d of 64 key bytes", same)
	}
}

func TestStaleKeyNeverMatchesOnReuse(t *testing.T) {
	// One region slot and one window slot: every registration reuses one of
	// two slots, and each new occupant gets a key index of its own.
	tb := newTable(t, Config{MaxRegions: 1, MaxWindows: 1})
	history := map[uint32][]uint32{} // slot -> keys, oldest first
	indices := map[uint32]bool{}
	mem := make([]byte, 16)
	for i := 0; i < 1000; i++ {
		r := mustRegister(t, tb, 1, mem, 0, RemoteRead)
		key := r.RKey()
		idx := r.index
		indices[KeyIndex(key)] = true
		past := history[idx]
		for j := len(past) - 1; j >= 0 && j >= len(past)-recentKeys; j-- {
			if past[j] == key {
				t.Fatalf("registration %d: key %#x repeats one of the last %d in its slot", i, key, recentKeys)
			}
		}
		for _, old := range past {
			if old == key {
				continue // allowed after recentKeys reuses; the old key is this key
			}
			if _, f := tb.CheckRemote(1, 0, old, 0, 1, RemoteRead); f != BadKey {
				t.Fatalf("stale key %#x: %v, want bad key", old, f)
			}
		}
		ref, f := tb.CheckRemote(1, 0, key, 0, 1, RemoteRead)
		if f != Ok {
			t.Fatalf("current key: %v", f)
		}
		ref.Release()
		history[idx] = append(past, key)
		if err := tb.Deregister(r); err != nil {
			t.Fatal(err)
		}
		if _, f := tb.CheckRemote(1, 0, key, 0, 1, RemoteRead); f != BadKey {
			t.Fatalf("deregistered key %#x: %v, want bad key", key, f)
		}
	}
	if len(history) > 2 {
		t.Errorf("%d slots used, want at most 2", len(history))
	}
	// 1000 occupants of one slot, 5592405 generations of its index: a
	// repeat is a 1-in-11000 chance.
	if len(indices) < 999 {
		t.Errorf("1000 occupants of one slot had only %d key indices: a reused slot keeps its index", len(indices))
	}
}

func TestKeyHistory(t *testing.T) {
	var h keyHistory
	for i := 0; i < 100; i++ {
		h.add(uint8(i))
	}
	for i := 0; i < 100; i++ {
		if want := i >= 100-recentKeys; h.has(uint8(i)) != want {
			t.Errorf("has(%d) = %v, want %v", i, !want, want)
		}
	}
	ks, err := newKeySource(nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10000; i++ {
		before := h
		b := ks.fresh(&h)
		if before.has(b) {
			t.Fatalf("fresh returned recent byte %d", b)
		}
	}
}
