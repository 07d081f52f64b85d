// Memory regions: thin wrappers over memory.Table that add the PD's
// reference count and verbs error semantics. Keys, bounds and access checks
// are memory's; see the memory package for the rules.

package nic

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
)

// MR is a registered memory region.
type MR struct {
	d  *Device
	pd *PD
	r  *memory.Region

	mu   sync.Mutex
	dead bool
}

// RegMR registers buf in pd (ibv_reg_mr). As in libibverbs the region's
// addresses are the buffer's own (the iova is the address of buf[0]) unless
// access has memory.ZeroBased, which makes them run from 0. SGEs and remote
// addresses then name bytes of buf by those addresses. A slice of a
// memory.Shared mapping is recognised and pins the mapping.
func (d *Device) RegMR(pd *PD, buf []byte, access memory.Access) (*MR, error) {
	var iova uint64
	if len(buf) > 0 {
		iova = uint64(uintptr(unsafe.Pointer(unsafe.SliceData(buf))))
	}
	return d.RegMRIOVA(pd, buf, iova, access)
}

// RegMRIOVA registers buf in pd with addresses starting at iova
// (ibv_reg_mr_iova).
func (d *Device) RegMRIOVA(pd *PD, buf []byte, iova uint64, access memory.Access) (*MR, error) {
	if err := d.checkFlushAccess("reg MR", access); err != nil {
		return nil, err
	}
	if err := pd.acquire(d); err != nil {
		return nil, fmt.Errorf("nic: reg MR: %w", err)
	}
	r, err := d.mem.Register(pd.id, buf, iova, access)
	if err != nil {
		pd.put()
		return nil, memErr("reg MR", err)
	}
	return &MR{d: d, pd: pd, r: r}, nil
}

// RegMRShared registers bytes [off, off+n) of shared memory sh in pd. The
// region's addresses are the offsets into sh (iova = off), so every process
// mapping sh names the same bytes by the same addresses.
func (d *Device) RegMRShared(pd *PD, sh *memory.Shared, off, n int, access memory.Access) (*MR, error) {
	if sh == nil {
		return nil, errorf(verbs.ErrInvalid, "reg shared MR: nil memory")
	}
	mem := sh.Bytes()
	if mem == nil {
		return nil, errorf(verbs.ErrInvalid, "reg shared MR: memory is closed")
	}
	if off < 0 || n <= 0 || off > len(mem) || n > len(mem)-off {
		return nil, errorf(verbs.ErrInvalid, "reg shared MR: [%d, %d+%d) outside %d bytes", off, off, n, len(mem))
	}
	return d.RegMRIOVA(pd, mem[off:off+n], uint64(off), access)
}

// AllocFastMR allocates a fast-register MR in pd: a key with no memory
// until FastRegMR, which LOCAL_INV and SEND_WITH_INV can invalidate
// (ib_alloc_mr with IB_MR_TYPE_MEM_REG).
func (d *Device) AllocFastMR(pd *PD) (*MR, error) {
	if err := pd.acquire(d); err != nil {
		return nil, fmt.Errorf("nic: alloc fast MR: %w", err)
	}
	r, err := d.mem.AllocFastMR(pd.id)
	if err != nil {
		pd.put()
		return nil, memErr("alloc fast MR", err)
	}
	return &MR{d: d, pd: pd, r: r}, nil
}

// FastRegMR maps buf at iova into a fast-register MR that is free (never
// registered, or invalidated) and returns its new key. It acts at once,
// like an IB_WR_REG_MR work request that completed, which the verbs opcode
// set here does not include; order it against the send queue yourself.
func (d *Device) FastRegMR(mr *MR, buf []byte, iova uint64, access memory.Access) (uint32, error) {
	if err := mr.live(d); err != nil {
		return 0, fmt.Errorf("nic: fast register: %w", err)
	}
	if err := d.checkFlushAccess("fast register", access); err != nil {
		return 0, err
	}
	key, err := d.mem.FastRegister(mr.r, buf, iova, access)
	if err != nil {
		return 0, memErr("fast register", err)
	}
	return key, nil
}

// DeregMR deregisters mr (ibv_dereg_mr). Its key stops resolving at once;
// DeregMR then waits until no DMA is copying through the region, so that,
// as in verbs, the memory is the caller's alone when it returns. It fails
// with verbs.ErrBusy while memory windows are bound to the region.
func (d *Device) DeregMR(mr *MR) error {
	if err := mr.live(d); err != nil {
		return fmt.Errorf("nic: dereg MR: %w", err)
	}
	mr.mu.Lock()
	if mr.dead {
		mr.mu.Unlock()
		return errorf(verbs.ErrDestroyed, "dereg MR %#x", mr.r.LKey())
	}
	if err := d.mem.Deregister(mr.r); err != nil {
		mr.mu.Unlock()
		return memErr("dereg MR", err)
	}
	mr.dead = true
	mr.mu.Unlock()
	mr.pd.put()
	<-mr.r.Drained()
	return nil
}

// live checks that mr is a live MR of d.
func (mr *MR) live(d *Device) error {
	if mr == nil || mr.d != d {
		return errorf(verbs.ErrInvalid, "not an MR of %s", d.name)
	}
	mr.mu.Lock()
	defer mr.mu.Unlock()
	if mr.dead {
		return errorf(verbs.ErrDestroyed, "MR %#x", mr.r.LKey())
	}
	return nil
}

// LKey returns the region's lkey (the latest one of a fast-register MR).
func (mr *MR) LKey() uint32 { return mr.r.LKey() }

// RKey returns the region's rkey, equal to its lkey.
func (mr *MR) RKey() uint32 { return mr.r.RKey() }

// Addr returns the address of the region's first byte (0 if zero-based).
func (mr *MR) Addr() uint64 { return mr.r.IOVA() }

// Len returns the region's length in bytes.
func (mr *MR) Len() uint64 { return mr.r.Len() }

// Access returns the region's access flags.
func (mr *MR) Access() memory.Access { return mr.r.Access() }

// PD returns the region's protection domain.
func (mr *MR) PD() *PD {
	mr.mu.Lock()
	defer mr.mu.Unlock()
	return mr.pd // ReregMR may change it
}

// Region returns the underlying memory region.
func (mr *MR) Region() *memory.Region { return mr.r }

// memErr maps a memory error to nic's sentinels, keeping memory's as well.
func memErr(op string, err error) error {
	var s error
	switch {
	case errors.Is(err, memory.ErrNoResources):
		s = verbs.ErrNoMemory
	case errors.Is(err, memory.ErrBusy):
		s = verbs.ErrBusy
	default: // invalid access, argument, size, closed shared memory
		s = verbs.ErrInvalid
	}
	return fmt.Errorf("nic: %s: %w: %w", op, s, err)
}

// checkFlushAccess refuses the FLUSH access flags a device does not
// offer, as the kernel's ib_check_mr_access does (EOPNOTSUPP): an iWARP
// device has no FLUSH at all.
func (d *Device) checkFlushAccess(what string, access memory.Access) error {
	if bad := access & (memory.FlushGlobal | memory.FlushPersistent) &^ d.capsEx().FlushAccess(); bad != 0 {
		return errorf(verbs.ErrNotSupported, "%s: access %v: the device offers no such FLUSH", what, bad)
	}
	return nil
}
