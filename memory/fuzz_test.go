// Native fuzz targets for the trust boundary: arbitrary keys, addresses and
// lengths against a table with a few regions and windows must never panic,
// and anything accepted must lie wholly inside what the key grants; scatter
// and gather must never touch bytes outside registered memory.

package memory

import (
	"math"
	"testing"
	"unsafe"
)

type fuzzTarget struct {
	key    uint32
	pd     PD
	qpn    uint32
	base   uint64
	mem    []byte // what the key grants
	access Access
}

// fuzzTable builds a table with a variety of targets, and returns it with
// the live targets and some dead keys.
func fuzzTable(t testing.TB) (*Table, []fuzzTarget, []uint32) {
	tb := newTable(t, Config{MaxRegions: 32, MaxWindows: 32})
	backing := make([]byte, 1<<14)
	all := LocalWrite | RemoteRead | RemoteWrite | RemoteAtomic | MWBind
	var live []fuzzTarget
	addMR := func(pd PD, mem []byte, iova uint64, acc Access) *Region {
		r := mustRegister(t, tb, pd, mem, iova, acc)
		live = append(live, fuzzTarget{r.RKey(), pd, 0, r.IOVA(), mem, acc})
		return r
	}
	mr := addMR(1, backing[0:4096], 0x10000, all)
	addMR(1, backing[4096:6000], 0, RemoteRead|ZeroBased)
	addMR(2, backing[6000:8192], math.MaxUint64-2191, LocalWrite|RemoteWrite|RemoteAtomic)
	addMR(1, backing[8193:9000], 0x7fff_ffff_fff0, LocalWrite|RemoteAtomic|RemoteRead) // odd host address

	w1, _ := tb.AllocWindow(1, Type1)
	k1, err := tb.Bind(1, 0, w1, Binding{MR: mr, Addr: 0x10100, Length: 512, Access: RemoteRead | RemoteWrite})
	if err != nil {
		t.Fatal(err)
	}
	live = append(live, fuzzTarget{k1, 1, 0, 0x10100, backing[0x100:0x300], RemoteRead | RemoteWrite})
	w2, _ := tb.AllocWindow(1, Type2B)
	k2, err := tb.Bind(1, 7, w2, Binding{MR: mr, Addr: 0x10804, Length: 100, Access: RemoteAtomic | RemoteRead | ZeroBased})
	if err != nil {
		t.Fatal(err)
	}
	live = append(live, fuzzTarget{k2, 1, 7, 0, backing[0x804:0x868], RemoteAtomic | RemoteRead})

	var dead []uint32
	gone := mustRegister(t, tb, 1, backing[9000:9100], 0, RemoteRead)
	dead = append(dead, gone.RKey())
	tb.Deregister(gone)
	fm, _ := tb.AllocFastMR(1)
	fk, _ := tb.FastRegister(fm, backing[9100:9200], 0, RemoteRead)
	tb.Invalidate(1, 0, fk)
	dead = append(dead, fk)
	w3, _ := tb.AllocWindow(1, Type2B)
	k3, _ := tb.Bind(1, 7, w3, Binding{MR: mr, Addr: 0x10000, Length: 8, Access: RemoteRead})
	tb.Invalidate(1, 7, k3)
	dead = append(dead, k3)
	return tb, live, dead
}

func FuzzCheckRemote(f *testing.F) {
	tb, live, dead := fuzzTable(f)
	f.Add(uint8(0), uint32(0), uint8(1), uint32(0), uint64(0x10000), uint32(4096), uint8(RemoteRead))
	f.Add(uint8(2), uint32(0), uint8(1), uint32(0), uint64(0), uint32(1900), uint8(RemoteRead))
	f.Add(uint8(4), uint32(0), uint8(2), uint32(0), uint64(math.MaxUint64-7), uint32(8), uint8(RemoteAtomic))
	f.Add(uint8(4), uint32(0), uint8(2), uint32(0), uint64(math.MaxUint64), uint32(2), uint8(RemoteWrite))
	f.Add(uint8(10), uint32(0), uint8(1), uint32(7), uint64(8), uint32(8), uint8(RemoteAtomic))
	f.Add(uint8(1), uint32(0xdeadbeef), uint8(1), uint32(0), uint64(0x10000), uint32(1), uint8(RemoteRead))
	f.Add(uint8(13), uint32(0), uint8(1), uint32(7), uint64(0x10000), uint32(1), uint8(RemoteRead))
	f.Fuzz(func(t *testing.T, sel uint8, raw uint32, pd8 uint8, qpn uint32, va uint64, length uint32, need8 uint8) {
		// Even sel picks a live key, sel%4==3 a dead one, others are raw.
		key := raw
		switch {
		case sel%2 == 0:
			key = live[int(sel/2)%len(live)].key
		case sel%4 == 3:
			key = dead[int(sel/4)%len(dead)]
		}
		pd, need := PD(pd8%3), Access(need8)&remoteAccess
		ref, f := tb.CheckRemote(pd, qpn, key, va, length, need)
		if length == 0 {
			if f != Ok || !ref.Empty() {
				t.Fatalf("zero length: %v", f)
			}
			return
		}
		if f != Ok {
			if !ref.Empty() {
				t.Fatalf("fault %v with a held ref", f)
			}
			return
		}
		defer ref.Release()
		var tg *fuzzTarget
		for i := range live {
			if live[i].key == key {
				tg = &live[i]
			}
		}
		if tg == nil {
			t.Fatalf("key %#x accepted but not live", key)
		}
		if tg.pd != pd || (tg.qpn != 0 && tg.qpn != qpn) || !tg.access.Has(need) {
			t.Fatalf("key %#x accepted for pd %d qpn %d need %v", key, pd, qpn, need)
		}
		off := va - tg.base
		if va < tg.base || off >= uint64(len(tg.mem)) || uint64(length) > uint64(len(tg.mem))-off {
			t.Fatalf("key %#x: va %#x len %d accepted outside [%#x, +%d)", key, va, length, tg.base, len(tg.mem))
		}
		// The Ref's memory is exactly the target's.
		if unsafe.SliceData(ref.tg.mem) != unsafe.SliceData(tg.mem) || len(ref.tg.mem) != len(tg.mem) {
			t.Fatalf("key %#x: ref memory differs from the target's", key)
		}
		n := min(int(length), 64)
		buf := make([]byte, n)
		if need&RemoteRead != 0 && ref.Read(va, buf) != Ok {
			t.Fatal("read inside an Ok range failed")
		}
		if need&RemoteWrite != 0 && ref.Write(va, buf) != Ok {
			t.Fatal("write inside an Ok range failed")
		}
		if need&RemoteAtomic != 0 {
			if _, f := ref.FetchAdd(va, 0); f != Ok {
				t.Fatalf("atomic at a checked address: %v", f)
			}
		}
		// Copies beyond the target fail, wherever they start.
		if ref.Read(va, make([]byte, len(tg.mem)+1)) == Ok {
			t.Fatal("read longer than the target accepted")
		}
		end := tg.base + uint64(len(tg.mem)) // may wrap to 0 for the top region
		if ref.Read(end, buf[:1]) == Ok || (tg.base > 0 && ref.Read(tg.base-1, buf[:1]) == Ok) {
			t.Fatal("read just outside the target accepted")
		}
	})
}

func FuzzScatterGather(f *testing.F) {
	f.Add(uint64(0x1000), uint32(100), uint8(0), uint64(0), uint32(50), uint8(1), 10, uint16(120))
	f.Add(uint64(math.MaxUint64-3), uint32(0x2000), uint8(0), uint64(4), uint32(8), uint8(1), 0, uint16(16))
	f.Add(uint64(0x1fff), uint32(2), uint8(0), uint64(4095), uint32(2), uint8(1), 1, uint16(3))
	f.Fuzz(func(t *testing.T, a1 uint64, l1 uint32, k1 uint8, a2 uint64, l2 uint32, k2 uint8, offset int, n uint16) {
		tb := newTable(t, Config{MaxRegions: 4, MaxWindows: 1})
		// Two regions inside one array, with guard bytes around them.
		backing := make([]byte, 3*4096)
		for i := range backing {
			backing[i] = 0x5a
		}
		r1 := mustRegister(t, tb, 1, backing[4096:8192], 0x1000, LocalWrite)
		r2 := mustRegister(t, tb, 1, backing[8192+1:8192+1+2048], 0, LocalWrite|ZeroBased)
		keys := []uint32{r1.LKey(), r2.LKey(), r1.LKey() ^ 0x10, 0}
		sges := []SGE{{a1, l1, keys[k1%4]}, {a2, l2, keys[k2%4]}}
		src := make([]byte, n)
		for i := range src {
			src[i] = 0xa5
		}
		total := TotalLength(sges)
		f := tb.Scatter(1, sges, src, offset)
		if f == Ok && (offset < 0 || uint64(offset)+uint64(n) > total) {
			t.Fatalf("scatter of %d at %d into %d bytes accepted", n, offset, total)
		}
		dst := make([]byte, n)
		got, f := tb.GatherAt(1, sges, offset, dst)
		if f == Ok && (got > int(n) || uint64(got) > total) {
			t.Fatalf("gathered %d", got)
		}
		for i, b := range backing {
			inside := (i >= 4096 && i < 8192) || (i >= 8193 && i < 8193+2048)
			if !inside && b != 0x5a {
				t.Fatalf("byte %d outside the regions written", i)
			}
		}
		for _, r := range []*Region{r1, r2} {
			if n := r.cur.Load().pin.refs.Load(); n != 1 {
				t.Fatalf("refs %d", n)
			}
		}
	})
}
