//go:build verbs

// The device (struct ibv_context) and the registry of the objects open on
// it: every PD, MR, CQ, SRQ, QP and AH has an id (the context libibverbs
// hands back in events) and a lock that keeps it alive while a verb uses
// it, so that Destroy and Device.Close never free what a concurrent call
// is passing to C.

package passthrough

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
)

type device struct {
	name  string
	ctx   *C.struct_ibv_context
	iwarp bool             // IBV_TRANSPORT_IWARP: QPs connect only through rdma_cm
	attr  verbs.DeviceAttr // queried at open; fixed for the device's life
	// rxeWCFlags: the device is Linux rxe, whose completions number the
	// "invalidated" flag as the kernel does (rn_poll_cq translates).
	rxeWCFlags bool

	// life is held for reading by every verb that passes ctx to C (enter)
	// and for writing by Close.
	life   sync.RWMutex
	closed atomic.Bool
	nextID atomic.Uint64

	mu   sync.Mutex // guards objs and bufs
	objs map[uintptr]object
	bufs map[*buffer]struct{}

	// ahMu guards ahs, the address handles by the AddressVector a UD
	// SendWR names them with; a UD post holds it for reading while C uses
	// the handles, AH.Destroy for writing.
	ahMu sync.RWMutex
	ahs  map[*verbs.AddressVector]*ah

	events    chan ibv.Event
	compCh    *C.struct_ibv_comp_channel
	compFile  *os.File
	asyncFile *os.File
	wg        sync.WaitGroup

	cm cmState
}

// object is a verbs object registered on its device.
type object interface {
	base() *handle
	// free destroys the C object; the caller holds the handle's lock.
	free() error
}

// handle is what every object embeds: its device, its id, and the lock
// verbs hold for reading while they pass the object to C.
type handle struct {
	d    *device
	id   uintptr
	mu   sync.RWMutex
	gone bool
}

func (h *handle) base() *handle { return h }

// rlock read-locks a live object for a verb that passes it to C; the
// verb runs the returned unlock when C is done with it.
func (h *handle) rlock(what string) (unlock func(), err error) {
	h.mu.RLock()
	if h.gone {
		h.mu.RUnlock()
		return nil, fmt.Errorf("passthrough: %s: %w", what, verbs.ErrDestroyed)
	}
	return h.mu.RUnlock, nil
}

// addrOf is the address of a slice's first byte.
func addrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// closeOrder is the order Device.Close destroys objects in: users before
// what they use.
func closeOrder(o object) int {
	switch o.(type) {
	case *mw:
		// Before the QP a Type 2B window is bound through and its MR:
		// rxe frees a QP a bound window holds only after a kernel
		// warning, and fails the MR's dereg.
		return 0
	case *qp:
		return 1
	case *ah:
		return 2
	case *srq:
		return 3
	case *mr:
		return 4
	case *cq:
		return 5
	}
	return 6 // *pd
}

// enter admits a verb that passes the device context to C, or fails
// once the device is closed; leave ends it. Close waits for every verb
// admitted, so it never closes the context under one.
func (d *device) enter() error {
	d.life.RLock()
	if d.closed.Load() {
		d.life.RUnlock()
		return errClosed()
	}
	return nil
}

func (d *device) leave() { d.life.RUnlock() }

// newID returns a fresh object id: the context C hands back in events.
func (d *device) newID() uintptr { return uintptr(d.nextID.Add(1)) }

// add records o, created under enter, with id.
func (d *device) add(id uintptr, h *handle, o object) {
	h.d, h.id = d, id
	d.mu.Lock()
	d.objs[id] = o
	d.mu.Unlock()
}

// destroy frees o and forgets it; a second destroy fails with
// verbs.ErrDestroyed.
func (d *device) destroy(o object, what string) error {
	h := o.base()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.gone {
		return fmt.Errorf("passthrough: destroy %s: %w", what, verbs.ErrDestroyed)
	}
	if err := o.free(); err != nil {
		return fmt.Errorf("passthrough: destroy %s: %w", what, err)
	}
	h.gone = true
	d.mu.Lock()
	delete(d.objs, h.id)
	d.mu.Unlock()
	return nil
}

func errClosed() error { return fmt.Errorf("passthrough: %w", verbs.ErrClosed) }

func (d *device) Name() string { return d.name }

func (d *device) Events() <-chan ibv.Event { return d.events }

// Close destroys what is still open on the device (rdma_cm IDs, MWs, QPs,
// AHs, SRQs, MRs, CQs, PDs, in that order), stops the event goroutines and
// closes the device. Buffers stay mapped until their own Close, so memory
// a program still holds never vanishes under it.
func (d *device) Close() error {
	if !d.closed.CompareAndSwap(false, true) {
		return errClosed()
	}
	d.life.Lock()
	defer d.life.Unlock()
	d.mu.Lock()
	objs := make([]object, 0, len(d.objs))
	for _, o := range d.objs {
		objs = append(objs, o)
	}
	d.mu.Unlock()

	d.cm.close()
	slices.SortStableFunc(objs, func(a, b object) int {
		return cmp.Or(cmp.Compare(closeOrder(a), closeOrder(b)), cmp.Compare(a.base().id, b.base().id))
	})
	var errs []error
	for _, o := range objs {
		h := o.base()
		h.mu.Lock()
		if !h.gone {
			if err := o.free(); err != nil {
				errs = append(errs, err)
			}
			h.gone = true
		}
		h.mu.Unlock()
	}
	d.mu.Lock()
	clear(d.objs)
	d.mu.Unlock()
	d.stopEvents()
	if r := C.ibv_close_device(d.ctx); r != 0 {
		errs = append(errs, fmt.Errorf("ibv_close_device: %d", int(r)))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("passthrough: close %s: %w", d.name, err)
	}
	return nil
}

// queryDevice fills d.attr (ibv_query_device, port 1's max_msg_sz and the
// largest inline size a QP accepts, which libibverbs does not report).
func (d *device) queryDevice() error {
	var a C.struct_ibv_device_attr
	if r := C.ibv_query_device(d.ctx, &a); r != 0 {
		return fmt.Errorf("ibv_query_device: %w", errnoErr(r))
	}
	var p C.struct_ibv_port_attr
	if r := C.rn_query_port(d.ctx, 1, &p); r != 0 {
		return fmt.Errorf("ibv_query_port: %w", errnoErr(r))
	}
	// DeviceCapFlagsEx stays empty: the device's FLUSH and ATOMIC WRITE
	// (rxe since Linux 6.2) need the extended WR API, which this backend
	// does not post through (post.go refuses them).
	d.attr = verbs.DeviceAttr{
		FwVer:           C.GoString(&a.fw_ver[0]),
		NodeGUID:        be64(unsafe.Pointer(&a.node_guid)),
		SysImageGUID:    be64(unsafe.Pointer(&a.sys_image_guid)),
		MaxMRSize:       uint64(a.max_mr_size),
		PageSizeCap:     uint64(a.page_size_cap),
		VendorID:        uint32(a.vendor_id),
		VendorPartID:    uint32(a.vendor_part_id),
		HWVer:           uint32(a.hw_ver),
		MaxQP:           int(a.max_qp),
		MaxQPWR:         int(a.max_qp_wr),
		DeviceCapFlags:  verbs.DeviceCap(a.device_cap_flags),
		MaxSGE:          int(a.max_sge),
		MaxSGERd:        int(a.max_sge_rd),
		MaxCQ:           int(a.max_cq),
		MaxCQE:          int(a.max_cqe),
		MaxMR:           int(a.max_mr),
		MaxPD:           int(a.max_pd),
		MaxQPRdAtom:     int(a.max_qp_rd_atom),
		MaxResRdAtom:    int(a.max_res_rd_atom),
		MaxQPInitRdAtom: int(a.max_qp_init_rd_atom),
		AtomicCap:       verbs.AtomicCap(a.atomic_cap),
		MaxMW:           int(a.max_mw),
		MaxAH:           int(a.max_ah),
		// The multicast limits, as the device reports them.
		MaxMcastGrp:           int(a.max_mcast_grp),
		MaxMcastQPAttach:      int(a.max_mcast_qp_attach),
		MaxTotalMcastQPAttach: int(a.max_total_mcast_qp_attach),
		MaxSRQ:                int(a.max_srq),
		MaxSRQWR:              int(a.max_srq_wr),
		MaxSRQSGE:             int(a.max_srq_sge),
		MaxPKeys:              int(a.max_pkeys),
		LocalCAAckDelay:       uint8(a.local_ca_ack_delay),
		PhysPortCnt:           uint8(a.phys_port_cnt),
		MaxMsgSize:            uint64(p.max_msg_sz),
	}
	d.attr.MaxInlineData = d.probeInline()
	// struct ibv_device's, which ibv_query_device does not report.
	d.attr.Transport = verbs.TransportIB
	if d.iwarp {
		d.attr.Transport = verbs.TransportIWARP
	}
	d.attr.NodeType = verbs.NodeType(d.ctx.device.node_type)
	d.rxeWCFlags = d.attr.VendorID == rxeVendorID
	return nil
}

// rxeVendorID is the vendor id Linux rxe reports (RXE_VENDOR_ID).
const rxeVendorID = 0xFFFFFF

// probeInline finds the largest inline size an RC QP of this device can
// be created with, trying powers of two downwards; the QP reports what it
// got, which may exceed what was asked.
func (d *device) probeInline() int {
	pd := C.ibv_alloc_pd(d.ctx)
	if pd == nil {
		return 0
	}
	defer C.ibv_dealloc_pd(pd)
	cq := C.ibv_create_cq(d.ctx, 1, nil, nil, 0)
	if cq == nil {
		return 0
	}
	defer C.ibv_destroy_cq(cq)
	for n := 1024; n >= 16; n /= 2 {
		init := C.struct_ibv_qp_init_attr{send_cq: cq, recv_cq: cq, qp_type: C.IBV_QPT_RC}
		init.cap = C.struct_ibv_qp_cap{max_send_wr: 1, max_recv_wr: 1, max_send_sge: 1, max_recv_sge: 1, max_inline_data: C.uint32_t(n)}
		if q := C.ibv_create_qp(pd, &init); q != nil {
			C.ibv_destroy_qp(q)
			return int(max(init.cap.max_inline_data, C.uint32_t(n)))
		}
	}
	return 0
}

// be64 reads a big-endian 64-bit value (__be64) as a number.
func be64(p unsafe.Pointer) uint64 {
	return binary.BigEndian.Uint64((*[8]byte)(p)[:])
}

func (d *device) Query() verbs.DeviceAttr { return d.attr }

func (d *device) QueryPort(port uint8) (verbs.PortAttr, error) {
	var p C.struct_ibv_port_attr
	if err := d.enter(); err != nil {
		return verbs.PortAttr{}, err
	}
	r := C.rn_query_port(d.ctx, C.uint8_t(port), &p)
	d.leave()
	if r != 0 {
		return verbs.PortAttr{}, fmt.Errorf("passthrough: query port %d: %w", port, errnoErr(r))
	}
	return verbs.PortAttr{
		State:      verbs.PortState(p.state),
		MaxMTU:     verbs.MTU(p.max_mtu),
		ActiveMTU:  verbs.MTU(p.active_mtu),
		GIDTblLen:  int(p.gid_tbl_len),
		MaxMsgSize: uint64(p.max_msg_sz),
		PKeyTblLen: int(p.pkey_tbl_len),
		PhysState:  uint8(p.phys_state),
		LinkLayer:  verbs.LinkLayer(p.link_layer),
		LinkMTU:    d.linkMTU(),
		// ibv_port_attr's counters; the kernel's stop at 0xFFFF
		BadPKeyCntr:  uint32(p.bad_pkey_cntr),
		QKeyViolCntr: uint32(p.qkey_viol_cntr),
	}, nil
}
