package proto

import "testing"

func TestRingPlaceCheck(t *testing.T) {
	for _, c := range []struct {
		p    RingPlace
		size uint64
		ok   bool
	}{
		{RingPlace{Chunk: 1, ChunkLen: ArenaChunkLen, Offset: 0}, ArenaChunkLen, true},
		{RingPlace{Chunk: 1, ChunkLen: ArenaChunkLen, Offset: ArenaPage}, ArenaChunkLen, false},
		{RingPlace{Chunk: 1, ChunkLen: ArenaChunkLen, Offset: 100}, 10, false},
		{RingPlace{Chunk: 0, ChunkLen: ArenaChunkLen}, 10, false},
		{RingPlace{Chunk: 1, ChunkLen: ArenaChunkLen + ArenaPage}, 10, false},
		{RingPlace{Chunk: 1, Own: true, ChunkLen: 8 * ArenaChunkLen}, 8 * ArenaChunkLen, true},
		{RingPlace{Chunk: 1, Own: true, ChunkLen: 8 * ArenaChunkLen, Offset: ArenaPage}, 10, false},
		{RingPlace{Chunk: 1, Own: true, ChunkLen: MaxOwnChunk + ArenaPage}, 10, false},
		{RingPlace{Chunk: 1, ChunkLen: ArenaChunkLen, Offset: 1 << 63}, 1 << 63, false},
	} {
		if err := c.p.Check(c.size); (err == nil) != c.ok {
			t.Errorf("%+v of %d bytes: %v, want ok %v", c.p, c.size, err, c.ok)
		}
	}
}
