//go:build verbs

// Memory regions (struct ibv_mr). Memory from AllocBuffer is outside the
// Go heap; any other memory is Go's, which the MR pins until Dereg,
// because the kernel keeps the address (the cgo rules allow C to keep a
// pointer to pinned memory only).

package passthrough

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
)

type mr struct {
	handle
	c          *C.struct_ibv_mr
	addr, n    uint64
	lkey, rkey uint32
	buf        *buffer // the Buffer the MR lies in, or nil
	pin        runtime.Pinner
}

func (d *device) RegMR(pd ibv.PD, buf []byte, access memory.Access) (ibv.MR, error) {
	return d.regMR(pd, buf, 0, false, access)
}

func (d *device) RegMRIOVA(pd ibv.PD, buf []byte, iova uint64, access memory.Access) (ibv.MR, error) {
	return d.regMR(pd, buf, iova, true, access)
}

func (d *device) regMR(x ibv.PD, buf []byte, iova uint64, useIOVA bool, access memory.Access) (ibv.MR, error) {
	if err := access.ValidateRegion(); err != nil {
		return nil, fmt.Errorf("passthrough: register MR: %w: %w", verbs.ErrInvalid, err)
	}
	if err := d.enter(); err != nil {
		return nil, err
	}
	defer d.leave()
	p, unlock, err := d.pdOf(x)
	if err != nil {
		return nil, err
	}
	defer unlock()
	m := &mr{}
	var ptr unsafe.Pointer
	if len(buf) > 0 {
		ptr = unsafe.Pointer(&buf[0])
		if m.buf = d.bufferAt(uintptr(ptr), len(buf)); m.buf == nil {
			m.pin.Pin(ptr)
		}
	}
	var use C.int
	if useIOVA {
		use = 1
	}
	c, err := C.rn_reg_mr(p.c, ptr, C.size_t(len(buf)), C.uint64_t(iova), C.int(access), use)
	if c == nil {
		m.unref()
		return nil, fmt.Errorf("passthrough: register MR of %d bytes: %w", len(buf), cErr(err))
	}
	m.c, m.n, m.lkey, m.rkey = c, uint64(len(buf)), uint32(c.lkey), uint32(c.rkey)
	m.addr = uint64(uintptr(c.addr))
	if useIOVA {
		m.addr = iova
	}
	d.add(d.newID(), &m.handle, m)
	return m, nil
}

func (m *mr) LKey() uint32 { return m.lkey }
func (m *mr) RKey() uint32 { return m.rkey }
func (m *mr) Addr() uint64 { return m.addr }
func (m *mr) Len() uint64  { return m.n }
func (m *mr) Dereg() error { return m.d.destroy(m, "MR") }

func (m *mr) free() error {
	if r := C.ibv_dereg_mr(m.c); r != 0 {
		return errnoErr(r)
	}
	m.unref()
	return nil
}

// unref lets go of the memory: unpins Go memory, drops the buffer
// reference.
func (m *mr) unref() {
	m.pin.Unpin()
	if m.buf != nil {
		m.buf.release()
		m.buf = nil
	}
}
