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
