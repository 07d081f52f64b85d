// Shared memory backing: a mapping that other processes can map too, and
// whose unmapping waits for every region and in-flight DMA on it. A global
// registry of live mappings lets Register recognise slices of a Shared by
// address, so memory that can be unmapped is always pinned by the regions
// over it. The platform part (memfd, mmap) is in shared_linux.go.

package memory

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Shared is a shared memory mapping (on Linux a sealed memfd mapped
// MAP_SHARED). Its methods are safe for concurrent use.
type Shared struct {
	mem      []byte
	fd       int
	fdClosed bool         // guarded by registry.mu
	refs     atomic.Int64 // 1 for the owner until Close, plus one per registration using it
	closed   bool         // guarded by registry.mu
	unmapped atomic.Bool
}

// registry lists the live Shared mappings, sorted by address: a daemon
// holds one per QP ring and per MR, so finding one is a binary search
// rather than a walk over thousands.
var registry struct {
	mu   sync.Mutex
	live []*Shared
}

func (s *Shared) start() uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(s.mem))) }

// liveIndex is the index of the first live mapping starting at addr or
// above; registry.mu is held.
func liveIndex(addr uintptr) int {
	i, _ := slices.BinarySearchFunc(registry.live, addr, func(s *Shared, a uintptr) int { return cmp.Compare(s.start(), a) })
	return i
}

func newShared(mem []byte, fd int) *Shared {
	s := &Shared{mem: mem, fd: fd}
	s.refs.Store(1)
	registry.mu.Lock()
	registry.live = slices.Insert(registry.live, liveIndex(s.start()), s)
	registry.mu.Unlock()
	return s
}

// Bytes returns the mapped memory, or nil once it is unmapped.
func (s *Shared) Bytes() []byte {
	if s.unmapped.Load() {
		return nil
	}
	return s.mem
}

// Len returns the size of the mapping in bytes.
func (s *Shared) Len() int { return len(s.mem) }

// Fd returns the file descriptor of the memory, to pass to another process
// (which maps it with MapShared), or -1 once unmapped. It stays owned by s.
func (s *Shared) Fd() int {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if s.unmapped.Load() || s.fdClosed {
		return -1
	}
	return s.fd
}

// CloseFd closes the descriptor of the memory and keeps the mapping: once
// every process that needs the memory has mapped it, holding a descriptor
// per mapping would only spend the process's descriptor limit (a daemon
// serving 10,000 QPs has that many rings). Fd returns -1 from now on.
func (s *Shared) CloseFd() error {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if s.fdClosed || s.unmapped.Load() {
		return nil
	}
	s.fdClosed = true
	return closeFd(s.fd)
}

// Close gives up the owner's use of s. The mapping and fd are released at
// once if no region uses s, otherwise when the last region using it is
// deregistered and no DMA holds it; registering more of s fails from now on.
// Bytes must not be used after Close.
func (s *Shared) Close() error {
	registry.mu.Lock()
	if s.closed {
		registry.mu.Unlock()
		return fmt.Errorf("memory: close shared: %w", ErrClosed)
	}
	s.closed = true
	registry.mu.Unlock()
	return s.release()
}

// release drops one reference and unmaps on the last.
func (s *Shared) release() error {
	n := s.refs.Add(-1)
	if n > 0 {
		return nil
	}
	if n < 0 {
		panic("memory: shared memory released more often than acquired")
	}
	registry.mu.Lock()
	if i := liveIndex(s.start()); i < len(registry.live) && registry.live[i] == s {
		registry.live = slices.Delete(registry.live, i, i+1)
	}
	registry.mu.Unlock()
	s.unmapped.Store(true)
	return s.unmap()
}

// releaseShared releases s if not nil.
func releaseShared(s *Shared) {
	if s != nil {
		_ = s.release()
	}
}

// sharedFor returns, with a reference taken, the live Shared that mem lies
// in, or nil if mem is not shared memory. mem reaching outside the mapping,
// or a closed Shared, is an error.
func sharedFor(mem []byte) (*Shared, error) {
	start := uintptr(unsafe.Pointer(unsafe.SliceData(mem)))
	end := start + uintptr(len(mem))
	registry.mu.Lock()
	defer registry.mu.Unlock()
	// Mappings do not overlap, so only the last one starting at or below
	// start and the one after it can meet mem.
	i := liveIndex(start+1) - 1
	for _, s := range registry.live[max(i, 0):min(i+2, len(registry.live))] {
		sStart := s.start()
		sEnd := sStart + uintptr(len(s.mem))
		if start >= sEnd || end <= sStart {
			continue
		}
		if start < sStart || end > sEnd {
			return nil, fmt.Errorf("memory: register: memory straddles a shared mapping: %w", ErrInvalidArgument)
		}
		if s.closed {
			return nil, fmt.Errorf("memory: register: %w", ErrClosed)
		}
		s.refs.Add(1) // the owner's reference is held, so refs > 0
		return s, nil
	}
	return nil, nil
}
