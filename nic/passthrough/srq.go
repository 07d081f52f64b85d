//go:build verbs

// Shared receive queues (struct ibv_srq).

package passthrough

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
)

type srq struct {
	handle
	c *C.struct_ibv_srq
}

func (d *device) CreateSRQ(x ibv.PD, maxWR, maxSGE int) (ibv.SRQ, error) {
	if maxWR <= 0 || maxSGE <= 0 {
		return nil, fmt.Errorf("passthrough: create SRQ of %d WRs × %d SGEs: %w", maxWR, maxSGE, verbs.ErrInvalid)
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
	a := C.struct_ibv_srq_init_attr{}
	a.attr.max_wr = C.uint32_t(maxWR)
	a.attr.max_sge = C.uint32_t(maxSGE)
	id := d.newID()
	c, err := C.rn_create_srq(p.c, &a, C.uintptr_t(id))
	if c == nil {
		return nil, fmt.Errorf("passthrough: create SRQ of %d WRs × %d SGEs: %w", maxWR, maxSGE, cErr(err))
	}
	s := &srq{c: c}
	d.add(id, &s.handle, s)
	return s, nil
}

func (s *srq) PostRecv(wrs ...*verbs.RecvWR) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if len(wrs) == 0 {
		return nil
	}
	if s.gone {
		return &verbs.PostError{Index: 0, WRID: recvID(wrs[0]), Err: fmt.Errorf("passthrough: post to SRQ: %w", verbs.ErrDestroyed)}
	}
	return postRecv(nil, s.c, wrs)
}

// Destroy fails with verbs.ErrBusy while QPs use the SRQ.
func (s *srq) Destroy() error { return s.d.destroy(s, "SRQ") }

func (s *srq) free() error {
	if r := C.ibv_destroy_srq(s.c); r != 0 {
		return errnoErr(r)
	}
	return nil
}

var _ ibv.SRQModifier = (*srq)(nil)

// QuerySRQ is ibv_query_srq: max_wr is the depth the provider gave the
// SRQ, which may be more than was asked (rxe rounds it up); zero if the
// SRQ is gone or the query fails.
func (s *srq) QuerySRQ() verbs.SRQAttr {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var a C.struct_ibv_srq_attr
	if s.gone || C.ibv_query_srq(s.c, &a) != 0 {
		return verbs.SRQAttr{}
	}
	return verbs.SRQAttr{MaxWR: int(a.max_wr), MaxSGE: int(a.max_sge), Limit: int(a.srq_limit)}
}

// ModifySRQ is ibv_modify_srq: resize (SRQMaxWR) and arm the limit
// (SRQLimit), as the provider allows.
func (s *srq) ModifySRQ(attr verbs.SRQAttr, mask verbs.SRQAttrMask) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.gone {
		return fmt.Errorf("passthrough: modify SRQ: %w", verbs.ErrDestroyed)
	}
	var a C.struct_ibv_srq_attr
	var m C.int
	if mask&verbs.SRQMaxWR != 0 {
		a.max_wr, m = C.uint32_t(attr.MaxWR), m|C.IBV_SRQ_MAX_WR
	}
	if mask&verbs.SRQLimit != 0 {
		a.srq_limit, m = C.uint32_t(attr.Limit), m|C.IBV_SRQ_LIMIT
	}
	if r := C.ibv_modify_srq(s.c, &a, m); r != 0 {
		return fmt.Errorf("passthrough: modify SRQ: %w", errnoErr(r))
	}
	return nil
}
