//go:build linux

package memory

import (
	"math/rand/v2"
	"testing"
)

// openShared maps n mappings of a page or two each and closes them at the
// end of the test.
func openShared(tb testing.TB, n int) []*Shared {
	tb.Helper()
	var all []*Shared
	for i := range n {
		s, err := NewShared(4096 * (1 + i%2))
		if err != nil {
			tb.Fatal(err)
		}
		all = append(all, s)
	}
	tb.Cleanup(func() {
		for _, s := range all {
			if !s.closed {
				s.Close()
			}
		}
	})
	return all
}

// TestSharedForFindsItsMapping: with many live mappings (the registry is
// searched by address), every slice inside a mapping finds it, a closed
// mapping is no longer found and the others still are.
func TestSharedForFindsItsMapping(t *testing.T) {
	all := openShared(t, 300)
	rng := rand.New(rand.NewPCG(19, 4))
	check := func(s *Shared) {
		t.Helper()
		off := rng.IntN(len(s.mem))
		n := rng.IntN(len(s.mem) - off + 1)
		got, err := sharedFor(s.mem[off : off+n])
		if err != nil || (n > 0 && got != s) {
			t.Fatalf("slice [%d:%d] of a %d-byte mapping: found %p, %v; want %p", off, off+n, len(s.mem), got, err, s)
		}
		if got != nil {
			got.release()
		}
	}
	for _, s := range all {
		check(s)
	}
	for i := 0; i < len(all); i += 3 {
		all[i].Close()
	}
	for i, s := range all {
		if i%3 == 0 {
			if got, _ := sharedFor(s.mem[:1]); got != nil {
				t.Fatalf("closed mapping %d still found", i)
			}
			continue
		}
		check(s)
	}
	if got, err := sharedFor(make([]byte, 64)); got != nil || err != nil {
		t.Fatalf("heap memory: %p, %v", got, err)
	}
}

// BenchmarkSharedFor: finding a mapping among 4096 live ones (a daemon
// with a few thousand QP rings registering an MR).
func BenchmarkSharedFor(b *testing.B) {
	all := openShared(b, 4096)
	i := 0
	for b.Loop() {
		s := all[i%len(all)]
		got, _ := sharedFor(s.mem[8:16])
		got.release()
		i += 97
	}
}
