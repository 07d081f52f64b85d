package server

import (
	"math/rand/v2"
	"testing"

	"github.com/rnic/rnic/nic/rnicd/proto"
)

// The allocator under a random mix of sizes, allocations and frees: live
// slots never overlap, lie inside their chunks at page-aligned offsets and
// hold their rings; the session is charged exactly its chunks; closing
// gives every byte back.
func TestArenaAllocatorRandom(t *testing.T) {
	srv := &Server{limits: Limits{MaxRingBytes: 1 << 40}.withDefaults()}
	srv.budget = newBudget(&srv.limits)
	s := &Session{srv: srv, tenant: &tenant{}}
	a := newArena(s)
	rng := rand.New(rand.NewPCG(1, 2))
	type live struct {
		sl   arenaSlot
		size uint64
	}
	var lives []live
	for i := range 4000 {
		if len(lives) > 0 && rng.IntN(3) == 0 {
			j := rng.IntN(len(lives))
			a.release(lives[j].sl)
			lives = append(lives[:j], lives[j+1:]...)
			continue
		}
		size := uint64(rng.IntN(64<<10) + 1)
		if rng.IntN(50) == 0 {
			size = proto.MaxArenaSlot + uint64(rng.IntN(3<<20)) // an own chunk
		}
		sl, err := a.alloc(size)
		if err != nil {
			t.Fatalf("alloc %d: %d bytes: %v", i, size, err)
		}
		p := proto.RingPlace{Chunk: sl.c.id, Own: sl.c.own, ChunkLen: uint64(sl.c.mem.Len()), Offset: sl.off}
		if err := p.Check(size); err != nil || sl.size < size {
			t.Fatalf("alloc %d: %d bytes in a slot of %d at %+v: %v", i, size, sl.size, p, err)
		}
		for _, l := range lives {
			if l.sl.c == sl.c && l.sl.off < sl.off+sl.size && sl.off < l.sl.off+l.sl.size {
				t.Fatalf("alloc %d: slot %d+%d of chunk %d overlaps live %d+%d", i, sl.off, sl.size, sl.c.id, l.sl.off, l.sl.size)
			}
		}
		lives = append(lives, live{sl, size})
	}
	var chunks uint64
	for _, c := range a.chunks {
		chunks += uint64(c.mem.Len())
	}
	if s.ring != chunks {
		t.Errorf("session charged %d ring bytes, its chunks are %d", s.ring, chunks)
	}
	t.Logf("%d live slots in %d chunks (%d MiB)", len(lives), len(a.chunks), chunks>>20)
	a.close()
	if s.ring != 0 || len(a.chunks) != 0 {
		t.Errorf("after close: %d ring bytes charged, %d chunks", s.ring, len(a.chunks))
	}
}
