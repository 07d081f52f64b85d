//go:build verbs

// Protection domains (struct ibv_pd).

package passthrough

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"

	"github.com/rnic/rnic/nic/ibv"
)

type pd struct {
	handle
	c *C.struct_ibv_pd
}

func (d *device) AllocPD() (ibv.PD, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	defer d.leave()
	c, err := C.ibv_alloc_pd(d.ctx)
	if c == nil {
		return nil, fmt.Errorf("passthrough: alloc PD: %w", cErr(err))
	}
	p := &pd{c: c}
	d.add(d.newID(), &p.handle, p)
	return p, nil
}

// Dealloc fails with verbs.ErrBusy while MRs, QPs, SRQs or AHs use the PD.
func (p *pd) Dealloc() error { return p.d.destroy(p, "PD") }

func (p *pd) free() error {
	if r := C.ibv_dealloc_pd(p.c); r != 0 {
		return errnoErr(r)
	}
	return nil
}

// pdOf unwraps a PD of d and read-locks it for the caller's C call; the
// caller runs unlock when done.
func (d *device) pdOf(x ibv.PD) (p *pd, unlock func(), err error) {
	p, ok := x.(*pd)
	if !ok || p.d != d {
		return nil, nil, fmt.Errorf("passthrough: PD: %w", ibv.ErrForeign)
	}
	if unlock, err = p.rlock("PD"); err != nil {
		return nil, nil, err
	}
	return p, unlock, nil
}
