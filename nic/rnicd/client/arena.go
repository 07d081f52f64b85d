// The session's ring arena (proto/arena.go): the
// rings of every QP, SRQ and CQ lie in a few chunks the daemon sends once
// each, mapped here whole until the device is closed. Creating an object
// whose chunk is mapped maps nothing; destroying one unmaps nothing,
// except a chunk of its own.

package client

import (
	"fmt"
	"sync"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/rnicd/proto"
)

// arena is the client's table of mapped chunks.
type arena struct {
	// mu is held over a create's round trip and the mapping of its
	// chunk: the replies of two creates arrive in order, but their
	// callers run in any, and the one naming a chunk without its memfd
	// must find it mapped by the one that got it.
	mu     sync.Mutex
	chunks map[uint32]*memory.Shared
}

func newArena() *arena { return &arena{chunks: make(map[uint32]*memory.Shared)} }

// ringRef is an object's hold on its ring memory.
type ringRef struct {
	a     *arena
	chunk uint32
	own   bool
}

// take returns the size bytes of ring memory at p, mapping its chunk if it
// is new to this client: from the reply's first descriptor when the reply
// has one more than the others it carries, else (the memfd went with an
// earlier reply this client failed to use) fetched with RING_CHUNK. It
// returns the other descriptors; on an error it has closed the chunk's.
// The caller holds d.arena.mu.
func (d *Device) takeRings(op string, p proto.RingPlace, size uint64, fds []int, others int) ([]byte, ringRef, []int, error) {
	a := d.arena
	ref := ringRef{a: a, chunk: p.Chunk, own: p.Own}
	if err := p.Check(size); err != nil {
		return nil, ref, fds, fmt.Errorf("rnicd: %s reply: %w", op, err)
	}
	mem, known := a.chunks[p.Chunk]
	switch {
	case len(fds) == others+1 && !known:
		var err error
		mem, err = mapRing(fds[0], p.ChunkLen)
		if fds = fds[1:]; err != nil {
			return nil, ref, fds, err
		}
		a.chunks[p.Chunk] = mem
	case len(fds) == others && !known:
		var err error
		if mem, err = d.fetchChunk(p); err != nil {
			return nil, ref, fds, fmt.Errorf("rnicd: %s: %w", op, err)
		}
		a.chunks[p.Chunk] = mem
	case len(fds) != others || mem == nil:
		return nil, ref, fds, fmt.Errorf("rnicd: %s reply with %d descriptors for chunk %d (mapped: %v), want %d besides the chunk's: %w",
			op, len(fds), p.Chunk, known, others, proto.ErrMalformed)
	}
	if uint64(mem.Len()) != p.ChunkLen {
		return nil, ref, fds, fmt.Errorf("rnicd: %s reply: chunk %d of %d bytes, mapped %d: %w", op, p.Chunk, p.ChunkLen, mem.Len(), proto.ErrMalformed)
	}
	return mem.Bytes()[p.Offset : p.Offset+size : p.Offset+size], ref, fds, nil
}

// fetchChunk asks for the memfd of chunk p again and maps it.
func (d *Device) fetchChunk(p proto.RingPlace) (*memory.Shared, error) {
	fds, err := d.call(proto.OpRingChunk, &proto.Handle{H: p.Chunk}, nil, &proto.Empty{})
	if err != nil {
		return nil, err
	}
	if len(fds) != 1 {
		closeFDs(fds)
		return nil, fmt.Errorf("RING_CHUNK reply with %d descriptors: %w", len(fds), proto.ErrMalformed)
	}
	return mapRing(fds[0], p.ChunkLen)
}

// release gives the rings up: a chunk of their own is unmapped; a shared
// chunk stays mapped for the objects the daemon places there later.
func (r ringRef) release() {
	if !r.own || r.a == nil {
		return
	}
	r.a.mu.Lock()
	mem := r.a.chunks[r.chunk]
	delete(r.a.chunks, r.chunk)
	r.a.mu.Unlock()
	if mem != nil {
		mem.Close()
	}
}

// close unmaps every chunk (Device.Close: every object is released).
func (a *arena) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for id, mem := range a.chunks {
		mem.Close()
		delete(a.chunks, id)
	}
}
