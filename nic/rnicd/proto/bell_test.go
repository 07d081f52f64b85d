package proto

import (
	"sync"
	"testing"
	"unsafe"
)

// Bells rung by many threads at once, while the daemon's side takes them,
// are each taken at least once after their last ring: none is lost,
// whichever words they share; and Take finds only bells that were rung.
func TestSessionBellLosesNoRing(t *testing.T) {
	mem := make([]uint64, BellAreaLen/8) // 8-byte aligned
	b, err := NewSessionBell(unsafeBytes(mem))
	if err != nil {
		t.Fatal(err)
	}
	const rounds, ringers = 200, 4
	bells := []uint32{0, 1, 63, 64, 4095, 4096, 40000, MaxBells - 1}
	for range rounds {
		var wg sync.WaitGroup
		for g := range ringers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i, n := range bells {
					if i%ringers == g {
						b.Ring(n)
					}
				}
			}()
		}
		got := map[uint32]bool{}
		stop := make(chan struct{})
		taken := make(chan struct{})
		go func() { // the daemon, taking while they ring
			defer close(taken)
			for {
				select {
				case <-stop:
					return
				default:
					b.Take(func(i uint32) { got[i] = true })
				}
			}
		}()
		wg.Wait()
		close(stop)
		<-taken
		b.Take(func(i uint32) { got[i] = true })
		for _, n := range bells {
			if !got[n] {
				t.Fatalf("bell %d rung but never taken", n)
			}
			delete(got, n)
		}
		if len(got) > 0 {
			t.Fatalf("bells %v taken but never rung", got)
		}
	}
	if b.Ring(MaxBells) {
		t.Fatal("bell MaxBells rang: out of range")
	}
}

// A short or misaligned area is refused.
func TestSessionBellRefusesBadArea(t *testing.T) {
	mem := make([]uint64, BellAreaLen/8+1)
	if _, err := NewSessionBell(unsafeBytes(mem)[:BellAreaLen-1]); err == nil {
		t.Error("short area accepted")
	}
	if _, err := NewSessionBell(unsafeBytes(mem)[1 : BellAreaLen+1]); err == nil {
		t.Error("misaligned area accepted")
	}
}

func unsafeBytes(w []uint64) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(w))), len(w)*8)
}
