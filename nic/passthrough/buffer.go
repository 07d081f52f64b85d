//go:build verbs

// Device.AllocBuffer: anonymous mmap'd memory, outside the Go heap, which
// the device may DMA into once registered. A buffer closed while MRs still
// cover it stays mapped until the last of them is deregistered.

package passthrough

import (
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
)

type buffer struct {
	d  *device
	mu sync.Mutex
	// mem is the whole mapping, as unix.Mmap returned it (Munmap needs
	// exactly that slice); the first n bytes are the buffer.
	mem    []byte
	n      int
	refs   int // MRs over the buffer
	closed bool
}

func (d *device) AllocBuffer(n int) (ibv.Buffer, error) {
	if n <= 0 {
		return nil, fmt.Errorf("passthrough: alloc buffer of %d bytes: %w", n, verbs.ErrInvalid)
	}
	if d.closed.Load() {
		return nil, errClosed()
	}
	page := os.Getpagesize()
	size := (n + page - 1) / page * page
	if size < n {
		return nil, fmt.Errorf("passthrough: alloc buffer of %d bytes: %w", n, verbs.ErrInvalid)
	}
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("passthrough: alloc buffer of %d bytes: mmap: %w", n, err)
	}
	b := &buffer{d: d, mem: mem, n: n}
	d.mu.Lock()
	d.bufs[b] = struct{}{}
	d.mu.Unlock()
	return b, nil
}

func (b *buffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	return b.mem[:b.n:b.n]
}

// Close unmaps the buffer, or, while MRs cover it, marks it for unmapping
// when the last is deregistered.
func (b *buffer) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return fmt.Errorf("passthrough: close buffer: %w", verbs.ErrDestroyed)
	}
	b.closed = true
	if b.refs == 0 {
		return b.unmap()
	}
	return nil
}

// unmap releases the mapping; the caller holds b.mu.
func (b *buffer) unmap() error {
	b.d.mu.Lock()
	delete(b.d.bufs, b)
	b.d.mu.Unlock()
	if err := unix.Munmap(b.mem); err != nil {
		return fmt.Errorf("passthrough: close buffer: munmap: %w", err)
	}
	b.mem = nil
	return nil
}

// bufferAt returns the buffer holding [p, p+n) with a reference taken for
// an MR, or nil if the range is not (wholly) in one of the device's
// buffers. Lock order is buffer, then device (unmap), so the device lock
// is not held while a buffer's is taken here.
func (d *device) bufferAt(p uintptr, n int) *buffer {
	d.mu.Lock()
	bufs := make([]*buffer, 0, len(d.bufs))
	for b := range d.bufs {
		bufs = append(bufs, b)
	}
	d.mu.Unlock()
	for _, b := range bufs {
		b.mu.Lock()
		if b.mem != nil {
			base := addrOf(b.mem)
			if p >= base && p-base+uintptr(n) <= uintptr(len(b.mem)) {
				b.refs++
				b.mu.Unlock()
				return b
			}
		}
		b.mu.Unlock()
	}
	return nil
}

// release drops an MR's reference, unmapping a closed buffer with the
// last one.
func (b *buffer) release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refs--
	if b.refs == 0 && b.closed && b.mem != nil {
		b.unmap()
	}
}
