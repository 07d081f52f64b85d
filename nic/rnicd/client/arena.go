// The session's ring arena (protocol version 5, proto/arena.go): the
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

// take returns the size bytes of ring memory at p, mapping its chunk if
// fds begins with the chunk's memfd: exactly when the chunk is new to
// this client. It returns the other descriptors; on an error it has
// closed the chunk's. The caller holds a.mu.
func (a *arena) take(op string, p proto.RingPlace, size uint64, fds []int) ([]byte, ringRef, []int, error) {
	ref := ringRef{a: a, chunk: p.Chunk, own: p.Own}
	if err := p.Check(size); err != nil {
		return nil, ref, fds, fmt.Errorf("rnicd: %s reply: %w", op, err)
	}
	mem, known := a.chunks[p.Chunk]
	if !known {
		if len(fds) == 0 {
			return nil, ref, fds, fmt.Errorf("rnicd: %s reply places rings in chunk %d without its memfd: %w", op, p.Chunk, proto.ErrMalformed)
		}
		var err error
		if mem, err = mapRing(fds[0], p.ChunkLen); err != nil {
			return nil, ref, fds[1:], err
		}
		fds = fds[1:]
		a.chunks[p.Chunk] = mem
	}
	if uint64(mem.Len()) != p.ChunkLen {
		return nil, ref, fds, fmt.Errorf("rnicd: %s reply: chunk %d of %d bytes, mapped %d: %w", op, p.Chunk, p.ChunkLen, mem.Len(), proto.ErrMalformed)
	}
	return mem.Bytes()[p.Offset : p.Offset+size : p.Offset+size], ref, fds, nil
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

// mappedChunks returns how many chunks are mapped (the tests).
func (a *arena) mappedChunks() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.chunks)
}
