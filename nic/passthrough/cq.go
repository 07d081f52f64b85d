//go:build verbs

// Completion queues (struct ibv_cq) on the device's completion channel:
// Poll moves completions in batches of RN_BATCH per cgo call; an armed CQ's
// event reaches Notify through the device's channel goroutine.

package passthrough

/*
#cgo noescape rn_poll_cq
#cgo nocallback rn_poll_cq
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"sync"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
)

type cq struct {
	handle
	c      *C.struct_ibv_cq
	notify chan struct{}

	errMu sync.Mutex
	err   error
}

func (d *device) CreateCQ(cqe int) (ibv.CQ, error) {
	if cqe <= 0 {
		return nil, fmt.Errorf("passthrough: create CQ of %d entries: %w", cqe, verbs.ErrInvalid)
	}
	if err := d.enter(); err != nil {
		return nil, err
	}
	defer d.leave()
	id := d.newID()
	c, err := C.rn_create_cq(d.ctx, C.int(cqe), C.uintptr_t(id), d.compCh)
	if c == nil {
		return nil, fmt.Errorf("passthrough: create CQ of %d entries: %w", cqe, cErr(err))
	}
	q := &cq{c: c, notify: make(chan struct{}, 1)}
	d.add(id, &q.handle, q)
	return q, nil
}

// Poll moves up to len(wcs) completions into wcs; a destroyed CQ has none.
func (q *cq) Poll(wcs []verbs.WC) int {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if q.gone {
		return 0
	}
	var out [C.RN_BATCH]C.struct_rn_wc
	var rxeFlags C.int
	if q.d.rxeWCFlags {
		rxeFlags = 1
	}
	total := 0
	for total < len(wcs) {
		want := min(len(wcs)-total, C.RN_BATCH)
		got := int(C.rn_poll_cq(q.c, C.int(want), &out[0], rxeFlags))
		if got < 0 {
			q.setErr(fmt.Errorf("passthrough: poll CQ: %w", errnoErr(C.int(got))))
			break
		}
		for i := range got {
			wcs[total+i] = wcFromC(&out[i])
		}
		total += got
		if got < want {
			break
		}
	}
	return total
}

// wcFromC converts a completion. Flags libibverbs has and verbs does not
// (IP_CSUM_OK, tag matching) are dropped.
func wcFromC(w *C.struct_rn_wc) verbs.WC {
	return verbs.WC{
		WRID:      uint64(w.wr_id),
		Status:    verbs.WCStatus(w.status),
		Opcode:    verbs.WCOpcode(w.opcode),
		VendorErr: uint32(w.vendor_err),
		ByteLen:   uint32(w.byte_len),
		Imm:       uint32(w.imm),
		InvRKey:   uint32(w.inv_rkey),
		QPN:       uint32(w.qp_num),
		SrcQP:     uint32(w.src_qp),
		Flags:     verbs.WCFlags(w.wc_flags) & (verbs.WCFlagGRH | verbs.WCFlagWithImm | verbs.WCFlagWithInv),
		PKeyIndex: uint16(w.pkey_index),
		SL:        uint8(w.sl),
	}
}

func (q *cq) ReqNotify(solicitedOnly bool) error {
	unlock, err := q.rlock("CQ")
	if err != nil {
		return err
	}
	defer unlock()
	var so C.int
	if solicitedOnly {
		so = 1
	}
	if r := C.rn_req_notify_cq(q.c, so); r != 0 {
		return fmt.Errorf("passthrough: arm CQ: %w", errnoErr(r))
	}
	return nil
}

func (q *cq) Notify() <-chan struct{} { return q.notify }

// Err is verbs.ErrCQOverrun after IBV_EVENT_CQ_ERR, verbs.ErrClosed once the
// device is closed.
func (q *cq) Err() error {
	if q.d.closed.Load() {
		return errClosed()
	}
	q.errMu.Lock()
	defer q.errMu.Unlock()
	return q.err
}

func (q *cq) setErr(err error) {
	q.errMu.Lock()
	defer q.errMu.Unlock()
	if q.err == nil {
		q.err = err
	}
}

// Destroy fails with verbs.ErrBusy while QPs use the CQ.
func (q *cq) Destroy() error { return q.d.destroy(q, "CQ") }

func (q *cq) free() error {
	if r := C.ibv_destroy_cq(q.c); r != 0 {
		return errnoErr(r)
	}
	return nil
}
