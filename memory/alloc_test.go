// Allocation tests of the hot paths: checks, copies, scatter/gather and
// atomics must not allocate.

package memory

import "testing"

func TestHotPathAllocs(t *testing.T) {
	tb := newTable(t, Config{})
	mem := aligned(4096)
	r := mustRegister(t, tb, 1, mem, 0x1000, LocalWrite|RemoteRead|RemoteWrite|RemoteAtomic|MWBind)
	w, _ := tb.AllocWindow(1, Type2B)
	wk, err := tb.Bind(1, 3, w, Binding{MR: r, Addr: 0x1000, Length: 1024, Access: RemoteWrite | ZeroBased})
	if err != nil {
		t.Fatal(err)
	}
	sges := []SGE{{0x1000, 100, r.LKey()}, {0x1200, 1000, r.LKey()}}
	buf := make([]byte, 1024)
	for name, fn := range map[string]func(){
		"CheckRemote+Read": func() {
			ref, _ := tb.CheckRemote(1, 0, r.RKey(), 0x1000, 1024, RemoteRead)
			ref.Read(0x1000, buf)
			ref.Release()
		},
		"CheckRemote window+Write": func() {
			ref, _ := tb.CheckRemote(1, 3, wk, 0, 1024, RemoteWrite)
			ref.Write(0, buf)
			ref.Release()
		},
		"CheckRemote fault": func() {
			tb.CheckRemote(2, 0, r.RKey(), 0x1000, 1024, RemoteRead)
			tb.CheckRemote(1, 0, r.RKey()^1, 0x1000, 1024, RemoteRead)
		},
		"CheckLocal": func() {
			ref, _ := tb.CheckLocal(1, r.LKey(), 0x1000, 64, LocalWrite)
			ref.Release()
		},
		"atomics": func() {
			ref, _ := tb.CheckRemote(1, 0, r.RKey(), 0x1008, 8, RemoteAtomic|RemoteWrite)
			ref.FetchAdd(0x1008, 1)
			ref.CompareSwap(0x1008, 1, 2)
			ref.AtomicWrite(0x1008, 3)
			ref.Release()
		},
		"GatherAt": func() { tb.GatherAt(1, sges, 50, buf) },
		"Scatter":  func() { tb.Scatter(1, sges, buf[:500], 90) },
	} {
		if n := testing.AllocsPerRun(200, fn); n != 0 {
			t.Errorf("%s: %v allocations", name, n)
		}
	}
}

func BenchmarkCheckRemoteWrite(b *testing.B) {
	tb := newTable(b, Config{})
	mem := make([]byte, 1<<16)
	r := mustRegister(b, tb, 1, mem, 0, LocalWrite|RemoteWrite)
	payload := make([]byte, 1024)
	b.SetBytes(int64(len(payload)))
	b.RunParallel(func(pb *testing.PB) {
		va := uint64(0)
		for pb.Next() {
			ref, f := tb.CheckRemote(1, 0, r.RKey(), va, 1024, RemoteWrite)
			if f != Ok {
				b.Fatal(f)
			}
			ref.Write(va, payload)
			ref.Release()
			va = (va + 1024) % (1 << 16)
		}
	})
}

func BenchmarkScatter(b *testing.B) {
	tb := newTable(b, Config{})
	mem := make([]byte, 1<<16)
	r := mustRegister(b, tb, 1, mem, 0, LocalWrite)
	sges := []SGE{{0, 1 << 15, r.LKey()}, {1 << 15, 1 << 15, r.LKey()}}
	payload := make([]byte, 4096)
	b.SetBytes(int64(len(payload)))
	for i := 0; b.Loop(); i++ {
		tb.Scatter(1, sges, payload, (i%16)*4096)
	}
}
