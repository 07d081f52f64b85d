//go:build verbs

// Memory windows (struct ibv_mw): ibv.MWAllocator on the device and
// ibv.MWBinder on its QPs, on devices whose max_mw is not 0 (rxe; siw has
// none, and ibv_alloc_mw fails there). A Type 1 window is bound with
// ibv_bind_mw, which the provider turns into a BIND_MW WQE and whose rkey
// it chooses; a Type 2B window by a BIND_MW WR in PostSend, which names the
// window by its rkey and the MR by its lkey (verbs.MWBind), as rnic's own
// WQE does: the device keeps both by key here so post.go can hand
// libibverbs the objects.

package passthrough

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"sync/atomic"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
)

var (
	_ ibv.MWAllocator = (*device)(nil)
	_ ibv.MWBinder    = (*qp)(nil)
)

type mw struct {
	handle
	c   *C.struct_ibv_mw
	typ memory.WindowType
	// rkey is the window's rkey as of its allocation or the last bind
	// posted here; the provider's mw->rkey follows it (see setRKey).
	rkey atomic.Uint32
}

func (d *device) AllocMW(x ibv.PD, typ memory.WindowType) (ibv.MW, error) {
	if typ != memory.Type1 && typ != memory.Type2B {
		return nil, fmt.Errorf("passthrough: alloc MW of type %d: %w", typ, verbs.ErrInvalid)
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
	c, err := C.rn_alloc_mw(p.c, C.int(typ))
	if c == nil {
		return nil, fmt.Errorf("passthrough: alloc %v MW: %w", typ, cErr(err))
	}
	m := &mw{c: c, typ: typ}
	m.rkey.Store(uint32(c.rkey))
	d.add(d.newID(), &m.handle, m)
	return m, nil
}

func (m *mw) RKey() uint32            { return m.rkey.Load() }
func (m *mw) Type() memory.WindowType { return m.typ }
func (m *mw) Dealloc() error          { return m.d.destroy(m, "MW") }

func (m *mw) free() error {
	if r := C.rn_dealloc_mw(m.c); r != 0 {
		return errnoErr(r)
	}
	return nil
}

// setRKey records a bind's new rkey, in the provider's struct too: rxe
// names the window of a BIND_MW WQE by mw->rkey and the kernel refuses a
// bind whose key is not the window's current one, so a Type 2B window
// bound again must carry the rkey of its last bind. The caller holds the
// window's lock.
func (m *mw) setRKey(rkey uint32) {
	m.c.rkey = C.uint32_t(rkey)
	m.rkey.Store(rkey)
}

// BindMW binds a Type 1 window (ibv_bind_mw); a nil MR with zero Length
// unbinds it. The provider picks the new rkey (rxe: the key byte plus one).
func (q *qp) BindMW(x ibv.MW, b ibv.MWBindInfo) (uint32, error) {
	m, ok := x.(*mw)
	if !ok || m.d != q.d {
		return 0, fmt.Errorf("passthrough: bind MW: %w", ibv.ErrForeign)
	}
	if m.typ != memory.Type1 {
		return 0, fmt.Errorf("passthrough: bind MW: ibv_bind_mw binds type 1 windows; post a BIND_MW WR for %v: %w", m.typ, verbs.ErrInvalid)
	}
	unlockQP, err := q.rlock("QP")
	if err != nil {
		return 0, err
	}
	defer unlockQP()
	// The window's write lock: two binds of one window must not race on
	// mw->rkey, which ibv_bind_mw reads and writes.
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.gone {
		return 0, fmt.Errorf("passthrough: bind MW: %w", verbs.ErrDestroyed)
	}
	var c *C.struct_ibv_mr
	if b.MR != nil {
		r, ok := b.MR.(*mr)
		if !ok || r.d != q.d {
			return 0, fmt.Errorf("passthrough: bind MW: MR: %w", ibv.ErrForeign)
		}
		unlock, err := r.rlock("MR")
		if err != nil {
			return 0, err
		}
		defer unlock()
		c = r.c
	}
	var rkey C.uint32_t
	if r := C.rn_bind_mw(q.c, m.c, c, C.uint64_t(b.ID), C.uint32_t(b.Flags), C.uint64_t(b.Addr),
		C.uint64_t(b.Length), C.uint32_t(b.Access), &rkey); r != 0 {
		return 0, fmt.Errorf("passthrough: bind MW %#x on QP %#x: %w", m.RKey(), q.qpn, postErrno(r))
	}
	m.rkey.Store(uint32(rkey))
	return uint32(rkey), nil
}

// bindObjects finds what a BIND_MW WR names: the window whose rkey is
// b.Window and the MR whose lkey is b.MR, both of this device, and locks
// them for the post (the window for writing: the post changes its rkey).
// The caller runs unlock once the post returned.
func (d *device) bindObjects(b *verbs.MWBind) (m *mw, r *mr, unlock func(), err error) {
	d.mu.Lock()
	for _, o := range d.objs {
		switch o := o.(type) {
		case *mw:
			if o.RKey() == b.Window {
				m = o
			}
		case *mr:
			if o.lkey == b.MR {
				r = o
			}
		}
	}
	d.mu.Unlock()
	if m == nil {
		return nil, nil, nil, fmt.Errorf("passthrough: BIND_MW: rkey %#x names no window of %s: %w", b.Window, d.name, verbs.ErrInvalid)
	}
	if r == nil {
		// rxe's post reads the MR's lkey without a check, so every bind
		// names one, an unbind (Length 0) too.
		return nil, nil, nil, fmt.Errorf("passthrough: BIND_MW: lkey %#x names no MR of %s: %w", b.MR, d.name, verbs.ErrInvalid)
	}
	unlockMR, err := r.rlock("MR")
	if err != nil {
		return nil, nil, nil, err
	}
	m.mu.Lock()
	if m.gone {
		m.mu.Unlock()
		unlockMR()
		return nil, nil, nil, fmt.Errorf("passthrough: BIND_MW: window: %w", verbs.ErrDestroyed)
	}
	return m, r, func() { m.mu.Unlock(); unlockMR() }, nil
}
