// Test helpers shared by the package's tests.

package memory

import (
	"errors"
	"testing"
)

func newTable(t testing.TB, cfg Config) *Table {
	t.Helper()
	tb, err := NewTable(cfg)
	if err != nil {
		t.Fatalf("NewTable: %v", err)
	}
	return tb
}

func mustRegister(t testing.TB, tb *Table, pd PD, mem []byte, iova uint64, acc Access) *Region {
	t.Helper()
	r, err := tb.Register(pd, mem, iova, acc)
	if err != nil {
		t.Fatalf("Register(pd %d, %d bytes, iova %#x, %v): %v", pd, len(mem), iova, acc, err)
	}
	return r
}

func mustShared(t testing.TB, size int) *Shared {
	t.Helper()
	s, err := NewShared(size)
	if err != nil {
		t.Fatalf("NewShared(%d): %v", size, err)
	}
	return s
}

func wantErr(t testing.TB, what string, err, want error) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Errorf("%s: unexpected error %v", what, err)
		}
		return
	}
	if !errors.Is(err, want) {
		t.Errorf("%s: error %v, want %v", what, err, want)
	}
}

// allRights is every right a region may carry except ZeroBased.
const allRights = LocalWrite | RemoteWrite | RemoteRead | RemoteAtomic | MWBind

// aligned returns an n-byte slice whose first byte is 8-byte aligned.
func aligned(n int) []byte {
	return make([]byte, n) // the Go allocator aligns allocations of 8+ bytes to 8
}
