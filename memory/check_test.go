// Table tests of CheckRemote and CheckLocal: keys, PDs, access flags,
// adversarial ranges (va near 2^64, zero length, spans past the end) and
// atomic alignment.

package memory

import (
	"math"
	"testing"
)

func TestCheckRemote(t *testing.T) {
	tb := newTable(t, Config{})
	const pd = PD(5)
	mem := aligned(4096)
	const iova = 0x10000
	rw := mustRegister(t, tb, pd, mem, iova, LocalWrite|RemoteRead|RemoteWrite|RemoteAtomic)
	ro := mustRegister(t, tb, pd, mem, iova, RemoteRead)
	top := mustRegister(t, tb, pd, mem, math.MaxUint64-4095, LocalWrite|RemoteRead|RemoteAtomic)
	odd := mustRegister(t, tb, pd, mem[1:], iova, LocalWrite|RemoteAtomic) // host address misaligned vs iova
	gone := mustRegister(t, tb, pd, mem, iova, RemoteRead)
	goneKey := gone.RKey()
	if err := tb.Deregister(gone); err != nil {
		t.Fatal(err)
	}
	k := rw.RKey()
	flip := k ^ 0x01 // same index, other key byte
	for _, c := range []struct {
		name   string
		pd     PD
		key    uint32
		va     uint64
		length uint32
		need   Access
		want   Fault
	}{
		{"whole region", pd, k, iova, 4096, RemoteRead, Ok},
		{"one byte at start", pd, k, iova, 1, RemoteWrite, Ok},
		{"last byte", pd, k, iova + 4095, 1, RemoteWrite, Ok},
		{"all rights", pd, k, iova + 8, 8, RemoteRead | RemoteWrite | RemoteAtomic, Ok},
		{"one past end", pd, k, iova + 4096, 1, RemoteRead, OutOfBounds},
		{"spans past end", pd, k, iova + 4000, 97, RemoteRead, OutOfBounds},
		{"before start", pd, k, iova - 1, 2, RemoteRead, OutOfBounds},
		{"va 0", pd, k, 0, 1, RemoteRead, OutOfBounds},
		{"va max", pd, k, math.MaxUint64, 1, RemoteRead, OutOfBounds},
		{"va+len wraps to inside", pd, k, math.MaxUint64 - 10, 0x10000 + 20, RemoteRead, OutOfBounds},
		{"len 2^31", pd, k, iova, 1 << 31, RemoteRead, OutOfBounds},
		{"len max", pd, k, iova, math.MaxUint32, RemoteRead, OutOfBounds},
		{"zero length, bad everything", 99, 0xdeadbeef, math.MaxUint64, 0, RemoteAtomic, Ok},
		{"zero length, good key", pd, k, iova, 0, RemoteRead, Ok},
		{"wrong key byte", pd, flip, iova, 1, RemoteRead, BadKey},
		{"key 0", pd, 0, iova, 1, RemoteRead, BadKey},
		{"unused index", pd, makeKey(1000, 0), iova, 1, RemoteRead, BadKey},
		{"index beyond table", pd, 0xffffffff, iova, 1, RemoteRead, BadKey},
		{"deregistered", pd, goneKey, iova, 1, RemoteRead, BadKey},
		{"wrong pd", pd + 1, k, iova, 1, RemoteRead, BadPD},
		{"read-only: write", pd, ro.RKey(), iova, 1, RemoteWrite, NoAccess},
		{"read-only: atomic", pd, ro.RKey(), iova, 8, RemoteAtomic, NoAccess},
		{"read-only: read", pd, ro.RKey(), iova, 1, RemoteRead, Ok},
		{"atomic aligned", pd, k, iova + 64, 8, RemoteAtomic, Ok},
		{"atomic misaligned va", pd, k, iova + 4, 8, RemoteAtomic, Misaligned},
		{"atomic misaligned host", pd, odd.RKey(), iova, 8, RemoteAtomic, Misaligned},
		{"atomic past end", pd, k, iova + 4096, 8, RemoteAtomic, OutOfBounds},
		{"top of address space", pd, top.RKey(), math.MaxUint64 - 4095, 4096, RemoteRead, Ok},
		{"top: last byte", pd, top.RKey(), math.MaxUint64, 1, RemoteRead, Ok},
		{"top: last byte + 1 wraps", pd, top.RKey(), math.MaxUint64, 2, RemoteRead, OutOfBounds},
		{"top: atomic at last word", pd, top.RKey(), math.MaxUint64 - 7, 8, RemoteAtomic, Ok},
		{"top: wrap to 0", pd, top.RKey(), 0, 1, RemoteRead, OutOfBounds},
	} {
		ref, f := tb.CheckRemote(c.pd, 0, c.key, c.va, c.length, c.need)
		if f != c.want {
			t.Errorf("%s: %v, want %v", c.name, f, c.want)
		}
		if f == Ok {
			if c.length > 0 {
				if ref.Empty() {
					t.Errorf("%s: empty ref", c.name)
				} else if _, ok := ref.tg.span(c.va, uint64(c.length)); !ok {
					t.Errorf("%s: Ok outside the target", c.name)
				}
			}
			ref.Release()
		} else if !ref.Empty() {
			t.Errorf("%s: fault %v with a non-empty ref", c.name, f)
		}
	}
	// Every Ref was released: the pins are back to the registration's.
	for _, r := range []*Region{rw, ro, top, odd} {
		if n := r.cur.Load().pin.refs.Load(); n != 1 {
			t.Errorf("region %#x: %d refs", r.RKey(), n)
		}
	}
}

func TestCheckLocal(t *testing.T) {
	tb := newTable(t, Config{})
	const pd = PD(2)
	mem := make([]byte, 256)
	r := mustRegister(t, tb, pd, mem, 0x2000, LocalWrite)
	ro := mustRegister(t, tb, pd, mem, 0x2000, RemoteRead)
	w, err := tb.AllocWindow(pd, Type1)
	if err != nil {
		t.Fatal(err)
	}
	mwmr := mustRegister(t, tb, pd, mem, 0x2000, LocalWrite|MWBind)
	mwKey, err := tb.Bind(pd, 0, w, Binding{MR: mwmr, Addr: 0x2000, Length: 16, Access: RemoteRead})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		pd     PD
		key    uint32
		addr   uint64
		length uint32
		need   Access
		want   Fault
	}{
		{"read", pd, r.LKey(), 0x2000, 256, 0, Ok},
		{"write", pd, r.LKey(), 0x2010, 16, LocalWrite, Ok},
		{"read-only write", pd, ro.LKey(), 0x2000, 1, LocalWrite, NoAccess},
		{"read-only read", pd, ro.LKey(), 0x2000, 1, 0, Ok},
		{"past end", pd, r.LKey(), 0x2000, 257, 0, OutOfBounds},
		{"wrap", pd, r.LKey(), math.MaxUint64, 0x2002, 0, OutOfBounds},
		{"wrong pd", pd + 1, r.LKey(), 0x2000, 1, 0, BadPD},
		{"window key is no lkey", pd, mwKey, 0x2000, 1, 0, BadKey},
		{"zero length", 77, 0, 0, 0, LocalWrite, Ok},
	} {
		ref, f := tb.CheckLocal(c.pd, c.key, c.addr, c.length, c.need)
		if f != c.want {
			t.Errorf("%s: %v, want %v", c.name, f, c.want)
		}
		ref.Release()
	}
}

// TestCheckLength2G accepts a 2^31-byte access over a 2 GiB + 8 KiB region
// (sparse shared memory: no page is touched).
func TestCheckLength2G(t *testing.T) {
	if testing.Short() {
		t.Skip("maps 2 GiB")
	}
	if math.MaxInt < 1<<32 {
		t.Skip("32-bit platform")
	}
	size := uint64(1)<<31 + 8192
	s, err := NewShared(int(size))
	if err != nil {
		t.Skipf("cannot map 2 GiB: %v", err)
	}
	defer s.Close()
	tb := newTable(t, Config{})
	r := mustRegister(t, tb, 1, s.Bytes(), 0x1000, LocalWrite|RemoteWrite)
	defer tb.Deregister(r)
	ref, f := tb.CheckRemote(1, 0, r.RKey(), 0x1000+4096, 1<<31, RemoteWrite)
	if f != Ok {
		t.Fatalf("2^31 bytes: %v", f)
	}
	ref.Release()
	if _, f := tb.CheckRemote(1, 0, r.RKey(), 0x1000+8193, 1<<31, RemoteWrite); f != OutOfBounds {
		t.Fatalf("2^31 bytes one past: %v", f)
	}
	if _, f := tb.CheckRemote(1, 0, r.RKey(), 0x1000, math.MaxUint32, RemoteWrite); f != OutOfBounds {
		t.Fatalf("2^32-1 bytes: %v", f)
	}
}
