// Memory: buffers the daemon can map (sealed memfds, memory.NewShared) and
// memory regions over them, registered at the client's own addresses.

package client

import (
	"fmt"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/verbs"
)

// buffer is memory from AllocBuffer. MRs over it keep it mapped after
// Close (ibv.Buffer's contract): this process reads it for inline data.
type buffer struct {
	d      *Device
	sh     *memory.Shared
	mrs    int  // live MRs over it; guarded by d.mu
	closed bool // guarded by d.mu
}

// Bytes returns the memory, nil after Close.
func (b *buffer) Bytes() []byte {
	b.d.mu.Lock()
	defer b.d.mu.Unlock()
	if b.closed {
		return nil
	}
	return b.sh.Bytes()
}

// Close gives the memory up; it is unmapped once no MR uses it.
func (b *buffer) Close() error {
	b.d.mu.Lock()
	defer b.d.mu.Unlock()
	if b.closed {
		return fmt.Errorf("rnicd: close buffer: %w", memory.ErrClosed)
	}
	b.closed = true
	if i := slices.Index(b.d.buffers, b); i >= 0 {
		b.d.buffers = slices.Delete(b.d.buffers, i, i+1)
	}
	if b.mrs == 0 {
		return b.sh.Close()
	}
	return nil
}

// unpin drops an MR's hold on b. Caller holds d.mu.
func (b *buffer) unpin() {
	b.mrs--
	if b.mrs == 0 && b.closed {
		b.sh.Close()
	}
}

// AllocBuffer returns n bytes of zeroed shared memory (a sealed memfd),
// the only memory RegMR takes.
func (d *Device) AllocBuffer(n int) (ibv.Buffer, error) {
	if n <= 0 {
		return nil, fmt.Errorf("rnicd: alloc buffer of %d bytes: %w", n, verbs.ErrInvalid)
	}
	sh, err := memory.NewShared(n)
	if err != nil {
		return nil, err
	}
	b := &buffer{d: d, sh: sh}
	d.mu.Lock()
	d.buffers = append(d.buffers, b)
	d.mu.Unlock()
	return b, nil
}

// pin returns the buffer holding mem and mem's offset in it, with an MR's
// hold on the buffer taken (unpin drops it).
func (d *Device) pin(mem []byte) (*buffer, uint64, error) {
	if len(mem) == 0 {
		return nil, 0, fmt.Errorf("rnicd: register 0 bytes: %w", verbs.ErrInvalid)
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(mem)))
	end := start + uintptr(len(mem))
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, b := range d.buffers {
		m := b.sh.Bytes()
		bs := uintptr(unsafe.Pointer(unsafe.SliceData(m)))
		if start >= bs && end <= bs+uintptr(len(m)) {
			b.mrs++
			return b, uint64(start - bs), nil
		}
	}
	return nil, 0, fmt.Errorf("rnicd: register memory: it must come from Device.AllocBuffer, which the daemon can map: %w", verbs.ErrInvalid)
}

func (d *Device) unpin(b *buffer) {
	d.mu.Lock()
	b.unpin()
	d.mu.Unlock()
}

// MR is a memory region of the daemon over a buffer of this process.
type MR struct {
	d          *Device
	h          uint32
	pd         *PD
	lkey, rkey uint32
	addr, len  uint64
	mem        []byte  // the registered bytes, for inline gathers
	buf        *buffer // kept mapped while the MR lives
	dead       atomic.Bool
}

func (m *MR) LKey() uint32 { return m.lkey }
func (m *MR) RKey() uint32 { return m.rkey }
func (m *MR) Addr() uint64 { return m.addr }
func (m *MR) Len() uint64  { return m.len }

// Dereg deregisters the MR; the daemon unmaps its view of the memory once
// no DMA uses it.
func (m *MR) Dereg() error {
	if _, err := m.d.call(proto.OpDeregMR, &proto.Handle{H: m.h}, nil, &proto.Empty{}); err != nil {
		return err
	}
	m.release()
	return nil
}

// release forgets the MR (deregistered, or reaped by the daemon).
func (m *MR) release() {
	if m.dead.Swap(true) {
		return
	}
	m.d.keys.Lock()
	if m.d.mrs[m.lkey] == m {
		delete(m.d.mrs, m.lkey)
	}
	m.d.keys.Unlock()
	m.d.unpin(m.buf)
}

// RegMR registers buf, which must lie in a buffer from AllocBuffer, at
// its own address.
func (d *Device) RegMR(pd ibv.PD, buf []byte, access memory.Access) (ibv.MR, error) {
	var iova uint64
	if len(buf) > 0 {
		iova = uint64(uintptr(unsafe.Pointer(unsafe.SliceData(buf))))
	}
	return d.RegMRIOVA(pd, buf, iova, access)
}

// RegMRIOVA registers buf, which must lie in a buffer from AllocBuffer,
// at address iova.
func (d *Device) RegMRIOVA(pd ibv.PD, buf []byte, iova uint64, access memory.Access) (ibv.MR, error) {
	p, err := d.pd(pd)
	if err != nil {
		return nil, err
	}
	b, off, err := d.pin(buf)
	if err != nil {
		return nil, err
	}
	req := &proto.RegMRReq{PD: p.h, Access: uint32(access), FileSize: uint64(b.sh.Len()), Offset: off,
		Length: uint64(len(buf)), IOVA: iova}
	var rep proto.RegMRReply
	if _, err := d.call(proto.OpRegMR, req, []int{b.sh.Fd()}, &rep); err != nil {
		d.unpin(b)
		return nil, err
	}
	m := &MR{d: d, h: rep.MR, pd: p, lkey: rep.LKey, rkey: rep.RKey, addr: rep.Addr, len: rep.Len, mem: buf, buf: b}
	d.keys.Lock()
	d.mrs[m.lkey] = m
	d.keys.Unlock()
	if d.goneError() != nil {
		m.release() // the reader has released the others already
	}
	return m, nil
}

// gather copies the bytes sgl names, through this process's MRs of pd,
// into dst; it returns how many, or an error for an SGE no MR of pd
// covers.
func (d *Device) gather(pd *PD, sgl []memory.SGE, dst []byte) (int, error) {
	n := 0
	d.keys.RLock()
	defer d.keys.RUnlock()
	for i := range sgl {
		e := &sgl[i]
		m := d.mrs[e.LKey]
		if m == nil || m.pd != pd {
			return 0, fmt.Errorf("rnicd: inline SGE %d: lkey %#x is no MR of the QP's PD: %w", i, e.LKey, verbs.ErrInvalid)
		}
		// Addresses run from m.addr (ZeroBased MRs from 0) over m.mem.
		if e.Addr < m.addr || e.Addr-m.addr > uint64(len(m.mem)) || uint64(e.Length) > uint64(len(m.mem))-(e.Addr-m.addr) {
			return 0, fmt.Errorf("rnicd: inline SGE %d: [%#x, +%d) outside MR %#x: %w", i, e.Addr, e.Length, e.LKey, verbs.ErrInvalid)
		}
		if int(e.Length) > len(dst)-n {
			return 0, fmt.Errorf("rnicd: inline data longer than %d bytes: %w", len(dst), verbs.ErrInvalid)
		}
		off := e.Addr - m.addr
		n += copy(dst[n:], m.mem[off:off+uint64(e.Length)])
	}
	return n, nil
}
