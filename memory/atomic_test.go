// Tests of the responder atomics: results, host byte order, rights,
// alignment, and atomicity under concurrency.

package memory

import (
	"encoding/binary"
	"sync"
	"testing"
	"unsafe"
)

func nativeEndian() binary.ByteOrder {
	x := uint16(1)
	if *(*byte)(unsafe.Pointer(&x)) == 1 {
		return binary.LittleEndian
	}
	return binary.BigEndian
}

func TestAtomics(t *testing.T) {
	tb := newTable(t, Config{})
	mem := aligned(64)
	r := mustRegister(t, tb, 1, mem, 0x1000, LocalWrite|RemoteAtomic|RemoteWrite|RemoteRead)
	ref, f := tb.CheckRemote(1, 0, r.RKey(), 0x1000, 8, RemoteAtomic|RemoteWrite)
	if f != Ok {
		t.Fatal(f)
	}
	defer ref.Release()
	ne := nativeEndian()
	ne.PutUint64(mem[8:], 100)

	if orig, f := ref.FetchAdd(0x1008, 5); f != Ok || orig != 100 || ne.Uint64(mem[8:]) != 105 {
		t.Errorf("FetchAdd: %v orig %d now %d", f, orig, ne.Uint64(mem[8:]))
	}
	if orig, f := ref.FetchAdd(0x1008, ^uint64(0)); f != Ok || orig != 105 || ne.Uint64(mem[8:]) != 104 {
		t.Errorf("FetchAdd wrap: %v orig %d", f, orig)
	}
	if orig, f := ref.CompareSwap(0x1008, 1, 7); f != Ok || orig != 104 || ne.Uint64(mem[8:]) != 104 {
		t.Errorf("CompareSwap mismatch: %v orig %d", f, orig)
	}
	if orig, f := ref.CompareSwap(0x1008, 104, 7); f != Ok || orig != 104 || ne.Uint64(mem[8:]) != 7 {
		t.Errorf("CompareSwap match: %v orig %d", f, orig)
	}
	if f := ref.AtomicWrite(0x1010, 0x0102030405060708); f != Ok || ne.Uint64(mem[16:]) != 0x0102030405060708 {
		t.Errorf("AtomicWrite: %v", f)
	}
	for _, c := range []struct {
		name string
		va   uint64
		want Fault
	}{
		{"misaligned", 0x1004, Misaligned},
		{"last word", 0x1038, Ok},
		{"past end", 0x1040, OutOfBounds},
		{"straddles end", 0x103c, OutOfBounds},
		{"before", 0xff8, OutOfBounds},
	} {
		if _, f := ref.FetchAdd(c.va, 0); f != c.want {
			t.Errorf("FetchAdd %s: %v, want %v", c.name, f, c.want)
		}
		if _, f := ref.CompareSwap(c.va, 0, 0); f != c.want {
			t.Errorf("CompareSwap %s: %v, want %v", c.name, f, c.want)
		}
		if f := ref.AtomicWrite(c.va, 0); f != c.want {
			t.Errorf("AtomicWrite %s: %v, want %v", c.name, f, c.want)
		}
	}

	// Rights: CAS/FAA need RemoteAtomic, ATOMIC WRITE needs RemoteWrite.
	rw, _ := tb.CheckRemote(1, 0, r.RKey(), 0x1000, 8, RemoteWrite|RemoteRead)
	if _, f := rw.FetchAdd(0x1000, 1); f != NoAccess {
		t.Errorf("FetchAdd without RemoteAtomic: %v", f)
	}
	if _, f := rw.CompareSwap(0x1000, 0, 1); f != NoAccess {
		t.Errorf("CompareSwap without RemoteAtomic: %v", f)
	}
	rw.Release()
	at, _ := tb.CheckRemote(1, 0, r.RKey(), 0x1000, 8, RemoteAtomic)
	if f := at.AtomicWrite(0x1000, 1); f != NoAccess {
		t.Errorf("AtomicWrite without RemoteWrite: %v", f)
	}
	at.Release()

	// Host misalignment, even with an aligned wire address.
	odd := mustRegister(t, tb, 1, mem[4:], 0x2000, LocalWrite|RemoteAtomic)
	if _, f := tb.CheckRemote(1, 0, odd.RKey(), 0x2000, 8, RemoteAtomic); f != Misaligned {
		t.Errorf("CheckRemote host-misaligned: %v", f)
	}
	oref, f := tb.CheckRemote(1, 0, odd.RKey(), 0x2004, 8, RemoteAtomic)
	if f != Misaligned {
		t.Errorf("CheckRemote wire-misaligned, host-aligned: %v", f)
	}
	oref.Release()
}

func TestAtomicsConcurrent(t *testing.T) {
	tb := newTable(t, Config{})
	mem := aligned(16)
	r := mustRegister(t, tb, 1, mem, 0, LocalWrite|RemoteAtomic)
	const workers, each = 8, 2000
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				ref, f := tb.CheckRemote(1, 0, r.RKey(), 0, 8, RemoteAtomic)
				if f != Ok {
					t.Error(f)
					return
				}
				ref.FetchAdd(0, 1)
				for { // CAS increment of the second word
					old, _ := ref.FetchAdd(8, 0)
					if got, _ := ref.CompareSwap(8, old, old+1); got == old {
						break
					}
				}
				ref.Release()
			}
		}()
	}
	wg.Wait()
	ne := nativeEndian()
	if a, b := ne.Uint64(mem), ne.Uint64(mem[8:]); a != workers*each || b != workers*each {
		t.Errorf("counters %d, %d, want %d", a, b, workers*each)
	}
}
