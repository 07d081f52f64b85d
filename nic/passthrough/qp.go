//go:build verbs

// Queue pairs (struct ibv_qp): create, modify, query, destroy. Posting is
// in post.go.

package passthrough

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"sync/atomic"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
)

type qp struct {
	handle
	c   *C.struct_ibv_qp
	qpn uint32
	typ verbs.QPType
	cap verbs.QPCap
	// set is the state the last Modify (or rdma_cm) moved the QP to. A
	// device moves a QP only to SQE or ERR by itself, never back to
	// RESET, so a query answering RESET for a QP set elsewhere is a
	// provider that does not report the state (siw on Linux 6.1 leaves
	// qp_state zero): then set is the answer.
	set atomic.Uint32
}

// state corrects a queried state (see set).
func (q *qp) state(queried verbs.QPState) verbs.QPState {
	if s := verbs.QPState(q.set.Load()); queried == verbs.QPSReset && s != verbs.QPSReset {
		return s
	}
	return queried
}

// allQPAttrs is every attribute ibv_query_qp may report.
const allQPAttrs = verbs.AttrState | verbs.AttrCurState | verbs.AttrEnSQDAsyncNotify | verbs.AttrAccessFlags |
	verbs.AttrPKeyIndex | verbs.AttrPort | verbs.AttrQKey | verbs.AttrAV | verbs.AttrPathMTU | verbs.AttrTimeout |
	verbs.AttrRetryCnt | verbs.AttrRNRRetry | verbs.AttrRQPSN | verbs.AttrMaxQPRdAtomic | verbs.AttrMinRNRTimer |
	verbs.AttrSQPSN | verbs.AttrMaxDestRdAtomic | verbs.AttrCap | verbs.AttrDestQPN

func (d *device) CreateQP(x ibv.PD, init ibv.QPInit) (ibv.QP, error) {
	fail := func(err error) (ibv.QP, error) {
		return nil, fmt.Errorf("passthrough: create %v QP: %w", init.Type, err)
	}
	if err := d.enter(); err != nil {
		return nil, err
	}
	defer d.leave()
	p, unlock, err := d.pdOf(x)
	if err != nil {
		return fail(err)
	}
	defer unlock()
	a := C.struct_ibv_qp_init_attr{qp_type: C.enum_ibv_qp_type(init.Type), cap: capToC(init.Cap)}
	if init.SigAll {
		a.sq_sig_all = 1
	}
	for _, c := range []struct {
		q   ibv.CQ
		dst **C.struct_ibv_cq
	}{{init.SendCQ, &a.send_cq}, {init.RecvCQ, &a.recv_cq}} {
		q, ok := c.q.(*cq)
		if c.q == nil {
			return fail(fmt.Errorf("a send and a receive CQ are required: %w", verbs.ErrInvalid))
		}
		if !ok || q.d != d {
			return fail(ibv.ErrForeign)
		}
		unlock, err := q.rlock("CQ")
		if err != nil {
			return fail(err)
		}
		defer unlock()
		*c.dst = q.c
	}
	if init.SRQ != nil {
		s, ok := init.SRQ.(*srq)
		if !ok || s.d != d {
			return fail(ibv.ErrForeign)
		}
		unlock, err := s.rlock("SRQ")
		if err != nil {
			return fail(err)
		}
		defer unlock()
		a.srq = s.c
	}
	id := d.newID()
	c, err := C.rn_create_qp(p.c, &a, C.uintptr_t(id))
	if c == nil {
		return fail(cErr(err))
	}
	q := &qp{c: c, qpn: uint32(c.qp_num), typ: init.Type, cap: capFromC(&a.cap)}
	d.add(id, &q.handle, q)
	return q, nil
}

func (q *qp) QPN() uint32        { return q.qpn }
func (q *qp) Type() verbs.QPType { return q.typ }
func (q *qp) Cap() verbs.QPCap   { return q.cap }

// State asks the device (ibv_query_qp): the QP can move to SQE or ERR on
// its own. A destroyed QP reads as ERR.
func (q *qp) State() verbs.QPState {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if q.gone {
		return verbs.QPSErr
	}
	var a C.struct_ibv_qp_attr
	var init C.struct_ibv_qp_init_attr
	if C.ibv_query_qp(q.c, &a, C.IBV_QP_STATE, &init) != 0 {
		return verbs.QPSErr
	}
	return q.state(verbs.QPState(a.qp_state))
}

func (q *qp) Modify(attr *verbs.QPAttr, mask verbs.QPAttrMask) error {
	unlock, err := q.rlock("QP")
	if err != nil {
		return err
	}
	defer unlock()
	var a C.struct_ibv_qp_attr
	qpAttrToC(attr, &a)
	if r := C.ibv_modify_qp(q.c, &a, C.int(mask)); r != 0 {
		return fmt.Errorf("passthrough: modify %v QP %#x to %v (mask %#x): %w", q.typ, q.qpn, attr.State, uint32(mask), errnoErr(r))
	}
	if mask&verbs.AttrState != 0 {
		q.set.Store(uint32(attr.State))
	}
	return nil
}

// modifyC applies an ibv_qp_attr as rdma_init_qp_attr returned it.
func (q *qp) modifyC(a *C.struct_ibv_qp_attr, mask C.int) error {
	unlock, err := q.rlock("QP")
	if err != nil {
		return err
	}
	defer unlock()
	if r := C.ibv_modify_qp(q.c, a, mask); r != 0 {
		return fmt.Errorf("passthrough: modify QP %#x to %v (mask %#x): %w", q.qpn, verbs.QPState(a.qp_state), int(mask), errnoErr(r))
	}
	if mask&C.IBV_QP_STATE != 0 {
		q.set.Store(uint32(a.qp_state))
	}
	return nil
}

func (q *qp) Query() (verbs.QPAttr, error) {
	unlock, err := q.rlock("QP")
	if err != nil {
		return verbs.QPAttr{}, err
	}
	defer unlock()
	var a C.struct_ibv_qp_attr
	var init C.struct_ibv_qp_init_attr
	if r := C.ibv_query_qp(q.c, &a, C.int(allQPAttrs), &init); r != 0 {
		return verbs.QPAttr{}, fmt.Errorf("passthrough: query QP %#x: %w", q.qpn, errnoErr(r))
	}
	attr := qpAttrFromC(&a)
	attr.State = q.state(attr.State)
	return attr, nil
}

func (q *qp) Destroy() error { return q.d.destroy(q, "QP") }

func (q *qp) free() error {
	if r := C.ibv_destroy_qp(q.c); r != 0 {
		return errnoErr(r)
	}
	return nil
}
