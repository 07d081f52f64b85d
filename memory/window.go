// Memory windows, Type 1 and Type 2B as rxe supports them (rxe advertises
// no Type 2A): allocation, binding to a sub-range of an MR with their own
// remote rights and rkey, and deallocation. The bind rules are the IBTA
// ones rxe implements by name (C10-72..75, o10-36.2.2, o10-37.2.30/40);
// invalidation is in invalidate.go.

package memory

import "fmt"

// WindowType is the type of a memory window.
type WindowType uint8

const (
	// Type1 windows are bound through a verb (ibv_bind_mw), belong to a PD,
	// are re-bound to move them and cannot be invalidated.
	Type1 WindowType = 1
	// Type2B windows are bound by a work request, belong to the QP that
	// bound them, and are freed by (local or remote) invalidation.
	Type2B WindowType = 2
)

func (w WindowType) String() string {
	switch w {
	case Type1:
		return "type 1"
	case Type2B:
		return "type 2B"
	}
	return fmt.Sprintf("WindowType(%d)", uint8(w))
}

// Window is a memory window. Its methods are safe for concurrent use.
type Window struct {
	t     *Table
	index uint32
	pd    PD
	typ   WindowType
	cur   atomicTarget // current or last binding; the key is set at allocation

	// guarded by t.mu
	bound *target // live binding, or nil
	gone  bool
}

// Binding describes what a window is bound to: Length bytes of MR starting
// at Addr (an address in MR's wire address space), with Access a set of
// RemoteRead, RemoteWrite, RemoteAtomic and ZeroBased (Type 2B only: the
// window's wire addresses then start at 0). LocalWrite means nothing for a
// window and is ignored, as rxe does (rdma-core's own tests pass it).
//
// RKey, if not zero, gives the key byte of the window's new rkey (its low
// 8 bits; the index part is always the window's): the verbs consumer owns
// the key byte of a window's rkey (ibv_inc_rkey, the bind WR's rkey). Zero
// draws a fresh, unpredictable key byte.
type Binding struct {
	MR     *Region
	Addr   uint64
	Length uint64
	Access Access
	RKey   uint32
}

// AllocWindow allocates an unbound window of type typ in pd.
func (t *Table) AllocWindow(pd PD, typ WindowType) (*Window, error) {
	if typ != Type1 && typ != Type2B {
		return nil, fmt.Errorf("memory: alloc window: %v: %w", typ, ErrInvalidArgument)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.windows >= t.cfg.MaxWindows {
		return nil, fmt.Errorf("memory: alloc window: %d windows: %w", t.windows, ErrNoResources)
	}
	t.windows++
	w := &Window{t: t, index: t.allocIndex(), pd: pd, typ: typ}
	w.cur.key.Store(t.newKey(w.index))
	t.windowAt[w.index] = w
	return w, nil
}

// DeallocWindow frees w, unbinding it first if bound.
func (t *Table) DeallocWindow(w *Window) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.ownsWindow(w); err != nil {
		return fmt.Errorf("memory: dealloc window: %w", err)
	}
	t.freeIndex(w.index) // first: a racing lookup then sees BadKey, not Invalidated
	delete(t.windowAt, w.index)
	w.unbind()
	w.gone = true
	t.windows--
	return nil
}

// Bind binds w as b describes, on behalf of QP qpn in protection domain pd,
// and returns the window's new rkey; the previous rkey is dead from then on.
// A Type 1 window may be re-bound while bound, and a Binding with no MR or
// zero Length unbinds it. A Type 2B window must be unbound (never bound, or
// invalidated) and becomes bound to qpn: only that QP can then use or
// invalidate it.
func (t *Table) Bind(pd PD, qpn uint32, w *Window, b Binding) (uint32, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.ownsWindow(w); err != nil {
		return 0, fmt.Errorf("memory: bind: %w", err)
	}
	if err := t.checkBind(pd, w, b); err != nil {
		return 0, fmt.Errorf("memory: bind %v window %#x: %w", w.typ, w.RKey(), err)
	}
	key := t.bindKey(w, b.RKey)
	b.Access &^= LocalWrite
	if b.MR == nil || b.Length == 0 { // Type 1 unbind
		t.slot(w.index).cur.Store(nil)
		w.unbind()
		w.cur.key.Store(key)
		return key, nil
	}
	mt := b.MR.cur.Load()
	off := b.Addr - mt.base
	tg := &target{
		key:    key,
		pd:     w.pd,
		qpn:    qpn,
		kind:   kindMW1,
		access: b.Access,
		base:   b.Addr,
		mem:    mt.mem[off : off+b.Length : off+b.Length],
		pin:    mt.pin,
		region: b.MR,
		window: w,
	}
	if w.typ == Type2B {
		tg.kind = kindMW2
	}
	if b.Access&ZeroBased != 0 {
		tg.base = 0
	}
	// Replace, then kill: the old key reads as BadKey, never Invalidated.
	t.slot(w.index).cur.Store(tg)
	w.unbind()
	b.MR.windows++
	w.bound = tg
	w.cur.set(tg)
	return key, nil
}

// checkBind applies the IBTA bind rules. Caller holds t.mu.
func (t *Table) checkBind(pd PD, w *Window, b Binding) error {
	if pd != w.pd { // C10-72
		return fmt.Errorf("QP PD %d, window PD %d: %w", pd, w.pd, ErrInvalidArgument)
	}
	if err := (b.Access &^ LocalWrite).validateWindow(); err != nil {
		return err
	}
	unbind := b.MR == nil || b.Length == 0
	switch w.typ {
	case Type1:
		if b.Access&ZeroBased != 0 { // o10-36.2.2
			return fmt.Errorf("type 1 windows cannot be zero-based: %w", ErrInvalidArgument)
		}
	case Type2B:
		if w.bound != nil { // o10-37.2.30
			return fmt.Errorf("window is bound, invalidate it first: %w", ErrBusy)
		}
		if unbind { // o10-37.2.40
			return fmt.Errorf("type 2B bind needs an MR and a length: %w", ErrInvalidArgument)
		}
	}
	if unbind {
		return nil
	}
	mr := b.MR
	if err := t.owns(mr); err != nil {
		return err
	}
	mt := mr.cur.Load()
	if mt == nil || mt.dead.Load() {
		return fmt.Errorf("MR %#x not valid: %w", mr.LKey(), ErrInvalidArgument)
	}
	if mr.pd != pd {
		return fmt.Errorf("MR PD %d, window PD %d: %w", mr.pd, pd, ErrInvalidArgument)
	}
	if mt.access&ZeroBased != 0 { // as rxe
		return fmt.Errorf("MR %#x is zero-based: %w", mt.key, ErrInvalidArgument)
	}
	if mt.access&MWBind == 0 { // C10-73
		return fmt.Errorf("MR %#x lacks MWBind: %w", mt.key, ErrInvalidAccess)
	}
	if b.Access&(RemoteWrite|RemoteAtomic) != 0 && mt.access&LocalWrite == 0 { // C10-74
		return fmt.Errorf("writable window on MR %#x without LocalWrite: %w", mt.key, ErrInvalidAccess)
	}
	if _, ok := mt.span(b.Addr, b.Length); !ok { // C10-75
		return fmt.Errorf("range %#x+%d outside MR %#x: %w", b.Addr, b.Length, mt.key, ErrInvalidArgument)
	}
	return nil
}

// bindKey returns the rkey a bind gives w: the window's key index with
// the consumer's key byte from want, or a fresh key byte when want is 0.
// Caller holds t.mu.
func (t *Table) bindKey(w *Window, want uint32) uint32 {
	if want == 0 {
		return t.newKey(w.index)
	}
	t.slot(w.index).hist.add(KeyByte(want))
	return makeKey(KeyIndex(w.RKey()), KeyByte(want))
}

// unbind kills w's live binding, if any. The dead target stays in the slot
// so its key reports Invalidated until the index is re-bound or freed.
// Caller holds t.mu.
func (w *Window) unbind() {
	if w.bound == nil {
		return
	}
	w.bound.kill()
	w.bound.region.windows--
	w.bound = nil
}

// ownsWindow checks that w is a live window of t. Caller holds t.mu.
func (t *Table) ownsWindow(w *Window) error {
	if w == nil || w.t != t {
		return fmt.Errorf("window of another table: %w", ErrInvalidArgument)
	}
	if w.gone {
		return fmt.Errorf("window deallocated: %w", ErrInvalidArgument)
	}
	return nil
}

// RKey returns the window's current rkey (valid only while bound).
func (w *Window) RKey() uint32 { return w.cur.key.Load() }

// PD returns the window's protection domain.
func (w *Window) PD() PD { return w.pd }

// Type returns the window's type.
func (w *Window) Type() WindowType { return w.typ }

// Bound reports whether the window is currently bound (its rkey resolves).
func (w *Window) Bound() bool {
	tg := w.cur.Load()
	return tg != nil && !tg.dead.Load()
}
