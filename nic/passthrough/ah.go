//go:build verbs

// Address handles (struct ibv_ah). A UD SendWR names its destination by
// the *verbs.AddressVector AH.AV returns; the device maps that pointer
// back to the ibv_ah when it posts.

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

type ah struct {
	handle
	c  *C.struct_ibv_ah
	av *verbs.AddressVector
}

func (d *device) CreateAH(x ibv.PD, av verbs.AddressVector) (ibv.AH, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	defer d.leave()
	p, unlock, err := d.pdOf(x)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var a C.struct_ibv_ah_attr
	ahAttrFromAV(&av, 1, &a)
	c, err := C.ibv_create_ah(p.c, &a)
	if c == nil {
		return nil, fmt.Errorf("passthrough: create AH to %v: %w", av.DGID, cErr(err))
	}
	h := &ah{c: c, av: &av}
	d.ahMu.Lock()
	if d.ahs == nil {
		d.ahs = make(map[*verbs.AddressVector]*ah)
	}
	d.ahs[h.av] = h
	d.ahMu.Unlock()
	d.add(d.newID(), &h.handle, h)
	return h, nil
}

func (h *ah) AV() *verbs.AddressVector { return h.av }
func (h *ah) Destroy() error           { return h.d.destroy(h, "AH") }

// free waits for UD posts using the handle to finish (ahMu).
func (h *ah) free() error {
	h.d.ahMu.Lock()
	defer h.d.ahMu.Unlock()
	if r := C.ibv_destroy_ah(h.c); r != 0 {
		return errnoErr(r)
	}
	delete(h.d.ahs, h.av)
	return nil
}
