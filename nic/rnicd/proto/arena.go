// The ring arena: a session's work and completion rings lie
// in a few large memfd-backed chunks the daemon owns, instead of one memfd
// per QP, SRQ and CQ, so creating an object costs no memfd_create,
// ftruncate, seal, mmap or SCM_RIGHTS on either side once its chunk is
// mapped, and destroying one no munmap.
//
// A CREATE_QP, CREATE_SRQ or CREATE_CQ_ON reply names where the object's
// rings lie (RingPlace): an offset in a chunk, by chunk id. The first
// reply naming a chunk carries the chunk's memfd (before any other
// descriptor of the reply); later ones carry none for it. The client maps
// each chunk once, whole, and keeps it until the session ends; the daemon
// hands a destroyed object's slot to a later object, after zeroing it.
//
// A chunk is ArenaChunkLen bytes and holds slots of power-of-two sizes
// from ArenaPage up to ArenaChunkLen/2. Rings larger than that get a chunk
// of their own (Own), of their page-rounded size: it holds that object
// only, and both sides unmap it when the object is destroyed. Chunk ids
// count up from 1 and are never reused in a session, so a client that
// maps a new chunk while another thread unmaps an own chunk cannot take
// one for the other.
//
// A client that missed a chunk's memfd (the reply's descriptors were lost
// at its descriptor limit, or mapping failed) asks for it again with
// RING_CHUNK when a reply names the chunk without it: the daemon keeps
// one descriptor per chunk for that, a few per session.
//
// Every offset and size comes from the daemon's allocator; a client's
// scribbles in a chunk are in its own memory, which the daemon reads as
// untrusted anyway.

package proto

import "fmt"

// OpRingChunk asks for the memfd of a ring chunk (Handle: the chunk id);
// the reply carries it.
const OpRingChunk Op = 0x0023

func init() {
	NameOp(OpRingChunk, "RING_CHUNK")
	RegisterBodies(OpRingChunk, Bodies{func() Message { return new(Handle) }, func() Message { return new(Empty) }})
}

// Arena geometry.
//
//rnicd:cheader
const (
	// ArenaPage is the alignment of every slot (and so of every ring).
	ArenaPage = 4096
	// ArenaChunkLen is the size of a shared chunk.
	ArenaChunkLen = 2 << 20
	// MaxArenaSlot is the largest slot of a shared chunk; larger rings
	// get a chunk of their own.
	MaxArenaSlot = ArenaChunkLen / 2
	// MaxOwnChunk bounds a chunk of one object: the largest rings
	// (MaxRingSlots slots of MaxSlotSize bytes, twice) and their header,
	// page-rounded.
	MaxOwnChunk = (RingHeaderLen + 2*MaxRingSlots*MaxSlotSize + ArenaPage - 1) &^ (ArenaPage - 1)
)

// RingPlace says where an object's rings lie in its session's arena:
// Offset bytes into chunk Chunk, a chunk of ChunkLen bytes. Own says the
// chunk holds this object alone and ends with it.
type RingPlace struct {
	Chunk    uint32
	Own      bool
	ChunkLen uint64
	Offset   uint64
}

func (p *RingPlace) Encode(w *Writer) {
	w.U32(p.Chunk)
	w.Bool(p.Own)
	w.U64(p.ChunkLen)
	w.U64(p.Offset)
}

func (p *RingPlace) Decode(r *Reader) {
	p.Chunk = r.U32()
	p.Own = r.Bool()
	p.ChunkLen = r.U64()
	p.Offset = r.U64()
}

// Check checks that rings of size bytes at p lie inside the chunk, as the
// daemon's allocator places them: a shared chunk is ArenaChunkLen bytes,
// an own one at most MaxOwnChunk, starting with the rings; offsets are
// page-aligned.
func (p RingPlace) Check(size uint64) error {
	switch {
	case p.Chunk == 0:
		return fmt.Errorf("%w: ring arena chunk 0", ErrMalformed)
	case p.Own && (p.Offset != 0 || p.ChunkLen > MaxOwnChunk || p.ChunkLen%ArenaPage != 0):
		return fmt.Errorf("%w: own ring chunk of %d bytes, rings at %d", ErrMalformed, p.ChunkLen, p.Offset)
	case !p.Own && p.ChunkLen != ArenaChunkLen:
		return fmt.Errorf("%w: ring arena chunk of %d bytes, want %d", ErrMalformed, p.ChunkLen, ArenaChunkLen)
	case p.Offset%ArenaPage != 0 || p.Offset > p.ChunkLen || size > p.ChunkLen-p.Offset:
		return fmt.Errorf("%w: %d bytes of rings at %d of a %d-byte chunk", ErrMalformed, size, p.Offset, p.ChunkLen)
	}
	return nil
}
