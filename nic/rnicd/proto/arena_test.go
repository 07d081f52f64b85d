package proto

import "testing"

// A create reply names a place in the arena from VersionRingArena on; an
// older client reads the layout it knows to the last byte.
func TestCreateRepliesPlaceByVersion(t *testing.T) {
	place := RingPlace{Chunk: 3, ChunkLen: ArenaChunkLen, Offset: 2 * ArenaPage}
	const placeLen = 4 + 1 + 8 + 8
	for _, mk := range []func() Versioned{
		func() Versioned { return &CreateQPReply{QP: 1, Place: place} },
		func() Versioned { return &CreateSRQReply{SRQ: 1, Place: place} },
		func() Versioned { return &CreateCQReply{CQ: 1, Place: place} },
	} {
		enc := func(v uint32) []byte {
			m := mk()
			m.SetVersion(v)
			w := NewWriter(nil)
			m.Encode(w)
			return w.Bytes()
		}
		old, cur := enc(VersionRingArena-1), enc(VersionRingArena)
		if len(cur) != len(old)+placeLen {
			t.Fatalf("%T: version 5 reply %d bytes, version 4 %d: want %d more", mk(), len(cur), len(old), placeLen)
		}
		got := mk()
		got.SetVersion(VersionRingArena)
		r := NewReader(cur)
		got.Decode(r)
		if p, _ := placeOf(got); r.Done() != nil || p != place {
			t.Fatalf("%T: version 5 decodes place %+v (%v), want %+v", got, p, r.Done(), place)
		}
		r = NewReader(old)
		got.Decode(r)
		if r.Done() == nil {
			t.Fatalf("%T: a version 4 reply decodes as version 5", got)
		}
	}
}

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
