// Tests of scatter/gather over SGE lists: offsets across SGE boundaries,
// zero-length SGEs, faults, and adversarial SGE addresses.

package memory

import (
	"bytes"
	"math"
	"testing"
)

func TestTotalLength(t *testing.T) {
	if n := TotalLength(nil); n != 0 {
		t.Errorf("nil: %d", n)
	}
	sges := []SGE{{Length: math.MaxUint32}, {Length: math.MaxUint32}, {Length: 2}}
	if n := TotalLength(sges); n != 2*math.MaxUint32+2 {
		t.Errorf("no overflow: %d", n)
	}
}

func TestGatherScatter(t *testing.T) {
	tb := newTable(t, Config{})
	const pd = PD(1)
	a := []byte("0123456789")
	b := []byte("abcdefghij")
	ra := mustRegister(t, tb, pd, a, 0x1000, LocalWrite)
	rb := mustRegister(t, tb, pd, b, 0x9000, LocalWrite)
	sges := []SGE{
		{Addr: 0x1002, Length: 4, LKey: ra.LKey()}, // "2345"
		{Addr: 0, Length: 0, LKey: 0xdeadbeef},     // zero-length: never checked
		{Addr: 0x9000, Length: 3, LKey: rb.LKey()}, // "abc"
		{Addr: 0x1008, Length: 2, LKey: ra.LKey()}, // "89"
	}
	want := "2345abc89"
	for off := 0; off <= len(want); off++ {
		for size := 0; size <= len(want)+2; size++ {
			dst := make([]byte, size)
			n, f := tb.GatherAt(pd, sges, off, dst)
			exp := want[off:]
			if len(exp) > size {
				exp = exp[:size]
			}
			if f != Ok || string(dst[:n]) != exp {
				t.Fatalf("GatherAt(off %d, size %d) = %q, %v; want %q", off, size, dst[:n], f, exp)
			}
		}
	}
	dst := make([]byte, 20)
	if n, f := tb.Gather(pd, sges, dst); f != Ok || string(dst[:n]) != want {
		t.Errorf("Gather = %q, %v", dst[:n], f)
	}
	if _, f := tb.GatherAt(pd, sges, len(want)+1, dst); f != OutOfBounds {
		t.Errorf("GatherAt beyond: %v", f)
	}
	if _, f := tb.GatherAt(pd, sges, -1, dst); f != OutOfBounds {
		t.Errorf("GatherAt negative: %v", f)
	}

	// Scatter a message packet by packet.
	msg := []byte("ABCDEFGHI")
	for off := 0; off < len(msg); off += 2 {
		end := min(off+2, len(msg))
		if f := tb.Scatter(pd, sges, msg[off:end], off); f != Ok {
			t.Fatalf("Scatter at %d: %v", off, f)
		}
	}
	if string(a) != "01ABCD67HI" || string(b) != "EFGdefghij" {
		t.Errorf("after scatter: %q %q", a, b)
	}
	if f := tb.Scatter(pd, sges, []byte("xy"), 8); f != OutOfBounds {
		t.Errorf("Scatter past end: %v", f)
	}
	if f := tb.Scatter(pd, sges, nil, 9); f != Ok {
		t.Errorf("Scatter empty at end: %v", f)
	}
	if f := tb.Scatter(pd, sges, nil, 10); f != OutOfBounds {
		t.Errorf("Scatter empty beyond end: %v", f)
	}
	if f := tb.Scatter(pd, sges, []byte("x"), -1); f != OutOfBounds {
		t.Errorf("Scatter negative offset: %v", f)
	}
	if string(a) != "01ABCD67HI" || string(b) != "EFGdefghij" {
		t.Errorf("failed scatter wrote: %q %q", a, b)
	}
}

func TestSGLFaults(t *testing.T) {
	tb := newTable(t, Config{})
	const pd = PD(1)
	mem := make([]byte, 32)
	rw := mustRegister(t, tb, pd, mem, 0x1000, LocalWrite)
	ro := mustRegister(t, tb, pd, mem, 0x1000, RemoteRead)
	other := mustRegister(t, tb, pd+1, mem, 0x1000, LocalWrite)
	w, _ := tb.AllocWindow(pd, Type1)
	mwmr := mustRegister(t, tb, pd, mem, 0x1000, LocalWrite|MWBind)
	wkey, err := tb.Bind(pd, 0, w, Binding{MR: mwmr, Addr: 0x1000, Length: 32, Access: RemoteRead})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		sge    SGE
		gather Fault
		scat   Fault
	}{
		{"ok", SGE{0x1000, 32, rw.LKey()}, Ok, Ok},
		{"read-only", SGE{0x1000, 32, ro.LKey()}, Ok, NoAccess},
		{"other pd", SGE{0x1000, 32, other.LKey()}, BadPD, BadPD},
		{"bad key", SGE{0x1000, 32, rw.LKey() ^ 0x80}, BadKey, BadKey},
		{"window key", SGE{0x1000, 32, wkey}, BadKey, BadKey},
		{"past end", SGE{0x1001, 32, rw.LKey()}, OutOfBounds, OutOfBounds},
		// An SGE whose end wraps past 2^64: Addr+offset must not land
		// inside the region.
		{"wrapping", SGE{math.MaxUint64 - 3, 0x1010, rw.LKey()}, OutOfBounds, OutOfBounds},
	} {
		sges := []SGE{c.sge}
		if _, f := tb.GatherAt(pd, sges, 8, make([]byte, 8)); f != c.gather {
			t.Errorf("%s: gather %v, want %v", c.name, f, c.gather)
		}
		if f := tb.Scatter(pd, sges, make([]byte, 8), 8); f != c.scat {
			t.Errorf("%s: scatter %v, want %v", c.name, f, c.scat)
		}
	}
	// SGEs wholly before the offset are not copied and not checked; the
	// faulty one that contributes is.
	sges := []SGE{{0, 4, 0xbad}, {0x1000, 4, rw.LKey()}, {0, 4, 0xbad}}
	if f := tb.Scatter(pd, sges, []byte("zz"), 4); f != Ok {
		t.Errorf("skip bad prefix: %v", f)
	}
	if f := tb.Scatter(pd, sges, []byte("zzzzz"), 4); f != BadKey {
		t.Errorf("reach bad suffix: %v", f)
	}
	if !bytes.Equal(mem[:4], []byte("zzzz")) {
		t.Errorf("mem = %q", mem[:4])
	}
	for _, r := range []*Region{rw, ro, other, mwmr} {
		if n := r.cur.Load().pin.refs.Load(); n != 1 {
			t.Errorf("region %#x: %d refs after SGL ops", r.LKey(), n)
		}
	}
}
