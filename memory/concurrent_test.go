// Concurrency test: lookups and copies on many goroutines while the control
// path registers, deregisters, binds, invalidates and re-registers. Run
// with -race. No check may panic or race, faults are only those the churn
// explains, and a copy through an Ok Ref always succeeds even if the key dies
// meanwhile. (Stale keys are tested deterministically in key_test.go: here a
// key may legitimately come back after many reuses of its slot.)

package memory

import (
	"sync"
	"sync/atomic"
	"testing"
)

func TestConcurrentChurn(t *testing.T) {
	tb := newTable(t, Config{MaxRegions: 64, MaxWindows: 64})
	var kept []*Region
	const pd = PD(1)
	var (
		keys [16]atomic.Uint32 // published keys for the readers
		stop atomic.Bool
		wg   sync.WaitGroup
	)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			buf := make([]byte, 64)
			for i := 0; !stop.Load(); i++ {
				k := keys[(i+g)%len(keys)].Load()
				ref, f := tb.CheckRemote(pd, 1, k, uint64(i%8)*64, 64, RemoteRead)
				switch f {
				case Ok:
					if f := ref.Read(uint64(i%8)*64, buf); f != Ok {
						t.Errorf("read through Ok ref: %v", f)
					}
					ref.Release()
				case BadKey, Invalidated, OutOfBounds:
				default:
					t.Errorf("key %#x: unexpected %v", k, f)
				}
				if i%16 == 0 {
					tb.Gather(pd, []SGE{{0, 64, k}}, buf)
				}
			}
		}(g)
	}
	mem := make([]byte, 512)
	for i := 0; i < 2000; i++ {
		slot := i % len(keys)
		switch i % 3 {
		case 0:
			r := mustRegister(t, tb, pd, mem, 0, LocalWrite|RemoteRead|MWBind)
			keys[slot].Store(r.RKey())
			w, err := tb.AllocWindow(pd, Type2B)
			if err != nil {
				t.Fatal(err)
			}
			wk, err := tb.Bind(pd, 1, w, Binding{MR: r, Addr: 64, Length: 256, Access: RemoteRead | ZeroBased})
			if err != nil {
				t.Fatal(err)
			}
			keys[(slot+1)%len(keys)].Store(wk)
			if f := tb.Invalidate(pd, 1, wk); f != Ok {
				t.Fatal(f)
			}
			tb.DeallocWindow(w)
			tb.Deregister(r)
		case 1:
			f, err := tb.AllocFastMR(pd)
			if err != nil {
				t.Fatal(err)
			}
			k, err := tb.FastRegister(f, mem[64:], 0, RemoteRead)
			if err != nil {
				t.Fatal(err)
			}
			keys[slot].Store(k)
			tb.Invalidate(pd, 0, k)
			tb.Deregister(f)
		case 2:
			r := mustRegister(t, tb, pd, mem[:128], 0, RemoteRead)
			keys[slot].Store(r.RKey())
			if i%2 == 0 {
				tb.Deregister(r)
			} else {
				kept = append(kept, r)
				if len(kept) > 32 {
					tb.Deregister(kept[0])
					kept = kept[1:]
				}
			}
		}
	}
	stop.Store(true)
	wg.Wait()
}
