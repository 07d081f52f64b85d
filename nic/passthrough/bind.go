//go:build verbs

// A BIND_MW WR in a post (Type 2B windows): the batch that carries it
// holds the window and the MR it names until ibv_post_send returned, and
// the window takes the WR's rkey once the post succeeded.

package passthrough

/*
#include "shim.h"
*/
import "C"

import "github.com/rnic/rnic/nic/verbs"

// pendingBind is a BIND_MW WR in a batch: its window, the rkey the window
// gets, and the unlock of the window and MR.
type pendingBind struct {
	mw     *mw
	rkey   uint32
	unlock func()
}

// startBind fills c's bind fields from wr.Bind and makes wr the batch's
// bind (the caller stops the batch after it).
func (b *sendBatch) startBind(d *device, c *C.struct_rn_send_wr, wr *verbs.SendWR) error {
	m, r, unlock, err := d.bindObjects(&wr.Bind)
	if err != nil {
		return err
	}
	c.mw, c.mr = m.c, r.c
	c.rkey = C.uint32_t(wr.Bind.RKey)
	c.bind_addr, c.bind_len = C.uint64_t(wr.Bind.Addr), C.uint64_t(wr.Bind.Length)
	c.bind_access = C.uint32_t(wr.Bind.Access)
	b.bind = &pendingBind{mw: m, rkey: wr.Bind.RKey, unlock: unlock}
	return nil
}

// endBind ends the batch's bind, if any, once its post returned: posted,
// the window has the WR's rkey (a bind that then fails completes with
// MW_BIND_ERR, and the window keeps the rkey, as rxe's own ibv_bind_mw
// leaves it).
func (b *sendBatch) endBind(posted bool) {
	if b.bind == nil {
		return
	}
	if posted {
		b.bind.mw.setRKey(b.bind.rkey)
	}
	b.bind.unlock()
	b.bind = nil
}
