//go:build verbs

// Multicast attachments (ibv_attach_mcast, ibv_detach_mcast): ibv.McastQP
// on a device's QP; the device applies its own rules and limits.

package passthrough

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"net/netip"
	"unsafe"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
)

var _ ibv.McastQP = (*qp)(nil)

func (q *qp) AttachMcast(gid netip.Addr, lid uint16) error {
	return q.mcast("attach", gid, lid, func(g *C.union_ibv_gid) C.int { return C.ibv_attach_mcast(q.c, g, C.uint16_t(lid)) })
}

func (q *qp) DetachMcast(gid netip.Addr, lid uint16) error {
	return q.mcast("detach", gid, lid, func(g *C.union_ibv_gid) C.int { return C.ibv_detach_mcast(q.c, g, C.uint16_t(lid)) })
}

func (q *qp) mcast(verb string, gid netip.Addr, lid uint16, call func(*C.union_ibv_gid) C.int) error {
	if err := q.d.enter(); err != nil {
		return err
	}
	defer q.d.leave()
	var g C.union_ibv_gid
	*(*[16]byte)(unsafe.Pointer(&g)) = verbs.GIDFromAddr(gid).As16()
	if r := call(&g); r != 0 {
		return fmt.Errorf("passthrough: %s QP %#x to %v (lid %#x): %w", verb, q.qpn, gid, lid, errnoErr(r))
	}
	return nil
}
