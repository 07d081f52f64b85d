// Memory windows (ibv_alloc_mw, ibv_dealloc_mw, ibv_bind_mw): handles over
// memory.Window with the PD's reference count. A bind, of either type, is
// a BIND_MW work request that the QP's send queue executes in order; the
// rules it checks then (IBTA C10-72..75, o10-36.2.2, o10-37.2.30/40) are
// memory's, and a bind that breaks one completes with MW_BIND_ERR.

package nic

import (
	"fmt"
	"sync"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
)

// MW is a memory window.
type MW struct {
	d  *Device
	pd *PD
	w  *memory.Window

	mu   sync.Mutex
	rkey uint32 // a Type 1 window's rkey as of its last posted bind
	dead bool
}

// AllocMW allocates an unbound window of type typ in pd (ibv_alloc_mw).
// Any type but 1 and 2 (2B) fails with verbs.ErrInvalid.
func (d *Device) AllocMW(pd *PD, typ memory.WindowType) (*MW, error) {
	if typ != memory.Type1 && typ != memory.Type2B {
		return nil, errorf(verbs.ErrInvalid, "alloc MW: type %d", typ)
	}
	d.mu.Lock()
	err := d.reserve(&d.mws, d.limits.MaxMW, "MW")
	d.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if err := pd.acquire(d); err != nil {
		d.release(&d.mws)
		return nil, fmt.Errorf("nic: alloc MW: %w", err)
	}
	w, err := d.mem.AllocWindow(pd.id, typ)
	if err != nil {
		pd.put()
		d.release(&d.mws)
		return nil, memErr("alloc MW", err)
	}
	return &MW{d: d, pd: pd, w: w, rkey: w.RKey()}, nil
}

// DeallocMW frees mw (ibv_dealloc_mw). A bound window is unbound first, as
// rxe does for Type 2B too: its rkey stops resolving at once.
func (d *Device) DeallocMW(mw *MW) error {
	if mw == nil || mw.d != d {
		return errorf(verbs.ErrInvalid, "dealloc MW: not an MW of %s", d.name)
	}
	mw.mu.Lock()
	defer mw.mu.Unlock()
	if mw.dead {
		return errorf(verbs.ErrDestroyed, "dealloc MW %#x", mw.w.RKey())
	}
	if err := d.mem.DeallocWindow(mw.w); err != nil {
		return memErr("dealloc MW", err)
	}
	mw.dead = true
	mw.pd.put()
	d.release(&d.mws)
	return nil
}

// RKey returns the window's rkey: for a Type 1 window the one its last
// BindMW gave it (ibv_bind_mw sets mw->rkey at post time), for a Type 2B
// window the one its last executed bind gave it (or its allocation).
func (mw *MW) RKey() uint32 {
	if mw.w.Type() == memory.Type2B {
		return mw.w.RKey()
	}
	mw.mu.Lock()
	defer mw.mu.Unlock()
	return mw.rkey
}

// Type returns the window's type.
func (mw *MW) Type() memory.WindowType { return mw.w.Type() }

// PD returns the window's protection domain.
func (mw *MW) PD() *PD { return mw.pd }

// Window returns the underlying memory window.
func (mw *MW) Window() *memory.Window { return mw.w }

// MWBindInfo is a Type 1 bind (struct ibv_mw_bind): the WR's ID and send
// flags, and the range of MR with the window's remote rights. A nil MR or
// a zero Length unbinds the window.
type MWBindInfo struct {
	ID     uint64
	Flags  verbs.SendFlags
	MR     *MR
	Addr   uint64
	Length uint64
	Access memory.Access
}

// BindMW binds a Type 1 window through q's send queue (ibv_bind_mw) and
// returns its new rkey, valid once the bind completes (IBV_WC_BIND_MW); a
// bind that breaks a rule completes with MW_BIND_ERR and the window keeps
// its old binding. Like rxe it refuses ZeroBased at once (o10-36.2.2).
func (q *QP) BindMW(mw *MW, b MWBindInfo) (uint32, error) {
	if mw == nil || mw.d != q.d {
		return 0, errorf(verbs.ErrInvalid, "bind MW: not an MW of %s", q.d.name)
	}
	if mw.w.Type() != memory.Type1 {
		return 0, errorf(verbs.ErrInvalid, "bind MW: ibv_bind_mw binds type 1 windows; post a BIND_MW WR for %v", mw.w.Type())
	}
	if b.Access&memory.ZeroBased != 0 {
		return 0, errorf(verbs.ErrInvalid, "bind MW: a type 1 window cannot be zero-based")
	}
	mw.mu.Lock()
	defer mw.mu.Unlock()
	if mw.dead {
		return 0, errorf(verbs.ErrDestroyed, "bind MW %#x", mw.rkey)
	}
	wr := verbs.SendWR{ID: b.ID, Opcode: verbs.WRBindMW, Flags: b.Flags, Bind: verbs.MWBind{
		Window: mw.rkey, Addr: b.Addr, Length: b.Length, Access: b.Access, RKey: mw.w.FreshRKey(),
	}}
	if b.MR != nil {
		wr.Bind.MR = b.MR.LKey()
	}
	if err := q.PostSend(&wr); err != nil {
		return 0, err
	}
	mw.rkey = wr.Bind.RKey
	return mw.rkey, nil
}
