// Test buffers and the one place a test reads memory the NIC writes behind
// its back.
//
// A latency test of RDMA WRITE learns that the peer's write has landed by
// watching the last byte of its buffer, as perftest does: no completion
// tells it. The NIC's engine goroutine writes that byte; nothing orders its
// write before the test's read except the byte itself, exactly as a
// hardware NIC's DMA is ordered only by the memory system. The buffers
// therefore live in shared memory (memory.Shared: a memfd mapping, outside
// the Go heap, as for an application in another process) and the byte is
// read with an atomic load, so the compiler can neither cache nor tear it.
// The race detector does not track memory outside the Go heap, which is
// right here: this is device memory traffic, not a data race between
// goroutines.
//
// A device of another backend gives the memory itself (Device.AllocBuffer):
// rnicd DMAs only into memory it can map, libibverbs into memory outside
// the Go heap.

package perf

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/ibv"
)

// buffer is a side's test memory.
type buffer struct {
	b      []byte
	shared *memory.Shared // a local NIC's; nil when the platform has no shared memory
	dev    ibv.Buffer     // another backend's
}

// newBuffer allocates n zeroed bytes that dev can DMA into: a local NIC's
// in shared memory where there is some (ibv.Local's AllocBuffer is the Go
// heap), another backend's from the device.
func newBuffer(dev ibv.Device, n int) (*buffer, error) {
	if nic.DeviceOf(dev) == nil {
		b, err := dev.AllocBuffer(n)
		if err != nil {
			return nil, err
		}
		return &buffer{b: b.Bytes(), dev: b}, nil
	}
	if sh, err := memory.NewShared(n); err == nil {
		return &buffer{b: sh.Bytes(), shared: sh}, nil
	}
	// Without memfd (not Linux) a heap buffer does: only the race
	// detector would notice the write-latency poll.
	return &buffer{b: make([]byte, n)}, nil
}

// close releases the memory; call it after the MR over it is deregistered.
func (m *buffer) close() {
	if m.shared != nil {
		m.shared.Close()
	}
	if m.dev != nil {
		m.dev.Close()
	}
}

// loadByte reads b[i] with an atomic load of the aligned 32-bit word that
// holds it. b must start 4-byte aligned (regions are 64-byte aligned).
func loadByte(b []byte, i int) byte {
	w := i &^ 3
	v := atomic.LoadUint32((*uint32)(unsafe.Pointer(&b[w : w+4][0])))
	var x [4]byte
	binary.NativeEndian.PutUint32(x[:], v)
	return x[i&3]
}
