// The session's ring arena (proto/arena.go): the
// daemon carves work and completion rings out of memfd chunks the session
// owns, so creating an object costs neither a memfd nor a mapping once its
// chunk exists. Slots are powers of two from a page to half a chunk, one
// free list per size; a chunk's tail too short for the next slot is cut
// into free slots of smaller sizes, and a free slot larger than asked is
// split before a new chunk is made. Freed slots are not merged: a session
// that frees many small rings and then asks for large ones gets a new
// chunk, which its ring limit counts.
//
// The session is charged for whole chunks (--max-ring-bytes): that is what
// the memory costs, whatever its slots hold. The daemon keeps each chunk's
// memfd open (a few per session) so that a client that missed one can ask
// for it again (RING_CHUNK).

package server

import (
	"fmt"
	"math/bits"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/verbs"
)

func init() {
	Register(proto.OpRingChunk, handleRingChunk)
}

// handleRingChunk sends a chunk's memfd again.
func handleRingChunk(s *Session, req *Request, rep *Reply) error {
	var m proto.Handle
	if err := req.Decode(&m); err != nil {
		return err
	}
	if s.arena == nil {
		return fmt.Errorf("%w: RING_CHUNK before OPEN", proto.ErrBadHandle)
	}
	s.arena.mu.Lock()
	c, ok := s.arena.chunks[m.H]
	fd := -1
	if ok {
		c.sent = true
		fd = c.mem.Fd()
	}
	s.arena.mu.Unlock()
	if fd < 0 {
		return fmt.Errorf("%w: ring chunk %d", proto.ErrBadHandle, m.H)
	}
	rep.Set(&proto.Empty{}, fd)
	return nil
}

// arenaClasses is the number of slot sizes: ArenaPage << k for k below it.
var arenaClasses = bits.Len(proto.MaxArenaSlot / proto.ArenaPage)

// arena is a session's ring chunks and their free slots.
type arena struct {
	s *Session

	mu     sync.Mutex
	nextID uint32
	chunks map[uint32]*arenaChunk
	cur    *arenaChunk // the chunk new slots are cut from
	curOff uint64
	free   [][]arenaSlot // by class
}

type arenaChunk struct {
	id   uint32
	mem  *memory.Shared
	own  bool // holds one object, freed with it
	sent bool // the client has had the memfd
}

// arenaSlot is a place in a chunk.
type arenaSlot struct {
	c         *arenaChunk
	off, size uint64
}

func newArena(s *Session) *arena {
	return &arena{s: s, chunks: make(map[uint32]*arenaChunk), free: make([][]arenaSlot, arenaClasses)}
}

// classOf returns the class of a ring of size bytes, or -1 if it needs a
// chunk of its own.
func classOf(size uint64) int {
	if size > proto.MaxArenaSlot {
		return -1
	}
	pages := (size + proto.ArenaPage - 1) / proto.ArenaPage
	return bits.Len64(max(pages, 1) - 1)
}

func classSize(k int) uint64 { return proto.ArenaPage << k }

func pageRound(n uint64) uint64 { return (n + proto.ArenaPage - 1) &^ (proto.ArenaPage - 1) }

// check says whether a ring of size bytes can be placed within the
// session's ring limit, placing nothing.
func (a *arena) check(size uint64) error {
	k := classOf(size)
	a.mu.Lock()
	defer a.mu.Unlock()
	if k >= 0 {
		for j := k; j < arenaClasses; j++ {
			if len(a.free[j]) > 0 {
				return nil
			}
		}
		if a.cur != nil && a.curOff+classSize(k) <= proto.ArenaChunkLen {
			return nil
		}
	}
	n := a.chunkLen(k, size)
	if err := a.s.reserveRing(n); err != nil {
		return err
	}
	a.s.unreserveRing(n)
	return nil
}

func (a *arena) chunkLen(k int, size uint64) uint64 {
	if k < 0 {
		return pageRound(size)
	}
	return proto.ArenaChunkLen
}

// alloc places a ring of size bytes and returns its slot, zeroed.
func (a *arena) alloc(size uint64) (arenaSlot, error) {
	if size == 0 || size > proto.MaxOwnChunk {
		return arenaSlot{}, fmt.Errorf("rnicd: rings of %d bytes: %w", size, verbs.ErrInvalid)
	}
	k := classOf(size)
	a.mu.Lock()
	defer a.mu.Unlock()
	if k < 0 {
		c, err := a.newChunk(pageRound(size), true)
		if err != nil {
			return arenaSlot{}, err
		}
		return arenaSlot{c: c, size: pageRound(size)}, nil
	}
	sl, ok := a.reuse(k)
	if ok {
		// An earlier object's rings, or whatever the client wrote
		// there since: nothing of it may reach the new object.
		zero(a.bytes(sl))
		return sl, nil
	}
	if a.cur == nil || a.curOff+classSize(k) > proto.ArenaChunkLen {
		c, err := a.newChunk(proto.ArenaChunkLen, false)
		if err != nil {
			return arenaSlot{}, err
		}
		a.retireCur()
		a.cur, a.curOff = c, 0
	}
	// Never handed out: the memfd's zeros, or what this client wrote
	// there itself, which reaches nobody else's rings.
	sl = arenaSlot{c: a.cur, off: a.curOff, size: classSize(k)}
	a.curOff += sl.size
	return sl, nil
}

// madviseMin is the slot size from which zeroing punches the pages out of
// the memfd (MADV_REMOVE: both sides then read zeros, and the memory goes
// back) rather than writing zeros over them.
const madviseMin = 64 << 10

// zero clears a slot of a chunk mapping.
func zero(b []byte) {
	if len(b) >= madviseMin && unix.Madvise(b, unix.MADV_REMOVE) == nil {
		return
	}
	clear(b)
}

// reuse takes a free slot of class k, splitting a larger one if need be.
func (a *arena) reuse(k int) (arenaSlot, bool) {
	for j := k; j < arenaClasses; j++ {
		n := len(a.free[j])
		if n == 0 {
			continue
		}
		sl := a.free[j][n-1]
		a.free[j] = a.free[j][:n-1]
		for ; j > k; j-- {
			// Keep the lower half, free the upper.
			sl.size /= 2
			a.free[j-1] = append(a.free[j-1], arenaSlot{c: sl.c, off: sl.off + sl.size, size: sl.size})
		}
		return sl, true
	}
	return arenaSlot{}, false
}

// retireCur cuts the rest of the current chunk into free slots.
func (a *arena) retireCur() {
	if a.cur == nil {
		return
	}
	for k := arenaClasses - 1; k >= 0; k-- {
		for a.curOff+classSize(k) <= proto.ArenaChunkLen {
			a.free[k] = append(a.free[k], arenaSlot{c: a.cur, off: a.curOff, size: classSize(k)})
			a.curOff += classSize(k)
		}
	}
}

// newChunk makes a chunk of n bytes, charged to the session.
func (a *arena) newChunk(n uint64, own bool) (*arenaChunk, error) {
	if a.nextID == ^uint32(0) {
		return nil, fmt.Errorf("rnicd: ring arena chunk ids spent: %w", verbs.ErrNoMemory)
	}
	if err := a.s.reserveRing(n); err != nil {
		return nil, err
	}
	mem, err := memory.NewShared(int(n))
	if err != nil {
		a.s.unreserveRing(n)
		return nil, err
	}
	a.nextID++
	c := &arenaChunk{id: a.nextID, mem: mem, own: own}
	a.chunks[c.id] = c
	return c, nil
}

func (a *arena) bytes(sl arenaSlot) []byte {
	return sl.c.mem.Bytes()[sl.off : sl.off+sl.size : sl.off+sl.size]
}

// release frees a slot: back on its free list, or an own chunk whole.
// Its rings' users (drainer, mover, event router) have stopped.
func (a *arena) release(sl arenaSlot) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if sl.c.own {
		delete(a.chunks, sl.c.id)
		sl.c.mem.Close()
		a.s.unreserveRing(uint64(sl.c.mem.Len()))
		return
	}
	k := classOf(sl.size)
	a.free[k] = append(a.free[k], sl)
}

// close unmaps every chunk (the session is reaped; no ring is in use).
func (a *arena) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for id, c := range a.chunks {
		c.mem.Close()
		a.s.unreserveRing(uint64(c.mem.Len()))
		delete(a.chunks, id)
	}
	a.cur = nil
	clear(a.free)
}

// ringMem is one object's ring memory: a slot of the session's arena.
type ringMem struct {
	s     *Session
	mem   []byte
	slot  arenaSlot
	fresh bool // the slot's chunk goes to the client with this reply
}

// errNoArena: ring memory asked for before OPEN made the arena.
var errNoArena = fmt.Errorf("rnicd: no ring arena before OPEN: %w", verbs.ErrInvalid)

// newRingMem allocates size bytes of ring memory, charged to s.
func (s *Session) newRingMem(size uint64) (*ringMem, error) {
	if s.arena == nil {
		return nil, errNoArena
	}
	sl, err := s.arena.alloc(size)
	if err != nil {
		return nil, err
	}
	r := &ringMem{s: s, slot: sl, mem: s.arena.bytes(sl)}
	s.arena.mu.Lock()
	r.fresh = !sl.c.sent
	s.arena.mu.Unlock()
	return r, nil
}

// checkRing says whether size bytes of ring memory would fit the
// session's limit.
func (s *Session) checkRing(size uint64) error {
	if s.arena == nil {
		return errNoArena
	}
	return s.arena.check(size)
}

// fds returns the descriptor the create reply carries for the memory:
// the chunk's memfd the first time, else none.
func (r *ringMem) fds() []int {
	if r.fresh {
		return []int{r.slot.c.mem.Fd()}
	}
	return nil
}

// place says where the rings lie.
func (r *ringMem) place() proto.RingPlace {
	return proto.RingPlace{Chunk: r.slot.c.id, Own: r.slot.c.own, ChunkLen: uint64(r.slot.c.mem.Len()), Offset: r.slot.off}
}

// sent runs once a successful reply went: a chunk is marked sent, its
// memfd kept for RING_CHUNK. (A chunk whose first object failed stays
// unsent: the next reply carries it.)
func (r *ringMem) sent() {
	if r.fresh {
		r.s.arena.mu.Lock()
		r.slot.c.sent = true
		r.s.arena.mu.Unlock()
	}
}

// free returns the memory; nothing may use it any more.
func (r *ringMem) free() { r.s.arena.release(r.slot) }
