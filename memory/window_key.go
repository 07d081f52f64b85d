// Binding a window named by keys, as a bind work request names it: the
// window by its current rkey and the MR by its lkey (rxe's bind WQE carries
// exactly these). The send queue executes the bind long after the consumer
// posted it, so the objects are resolved then, and a key that went stale
// in between (the window was re-bound, the MR deregistered) fails the bind.

package memory

import "fmt"

// WindowBind is a bind work request's view of a binding: which window
// (Window, its rkey when the WR was posted), to which MR (MR, its lkey;
// ignored when Length is 0, a Type 1 unbind), the range, the rights and
// the rkey the window gets (Binding.RKey).
type WindowBind struct {
	Window uint32
	MR     uint32
	Addr   uint64
	Length uint64
	Access Access
	RKey   uint32
}

// BindByKey binds the window b names as Bind does, on behalf of QP qpn in
// protection domain pd, and returns the window's new rkey. A key that names
// no live window or region fails with ErrInvalidArgument.
func (t *Table) BindByKey(pd PD, qpn uint32, b WindowBind) (uint32, error) {
	w, err := t.WindowByKey(b.Window)
	if err != nil {
		return 0, err
	}
	bind := Binding{Addr: b.Addr, Length: b.Length, Access: b.Access, RKey: b.RKey}
	if b.Length != 0 {
		if bind.MR, err = t.regionByKey(b.MR); err != nil {
			return 0, err
		}
	}
	return t.Bind(pd, qpn, w, bind)
}

// WindowByKey returns the allocated window whose current rkey is key.
func (t *Table) WindowByKey(key uint32) (*Window, error) {
	idx, ok := t.slotIndex(key)
	t.mu.Lock()
	defer t.mu.Unlock()
	w := t.windowAt[idx]
	if !ok || w == nil || w.RKey() != key {
		return nil, fmt.Errorf("memory: key %#x names no window: %w", key, ErrInvalidArgument)
	}
	return w, nil
}

// regionByKey returns the valid memory region whose lkey is key.
func (t *Table) regionByKey(key uint32) (*Region, error) {
	tg := t.lookup(key)
	if tg == nil || tg.kind != kindMR || tg.dead.Load() {
		return nil, fmt.Errorf("memory: key %#x names no valid MR: %w", key, ErrInvalidArgument)
	}
	return tg.region, nil
}

// slotIndex returns the slot a key's index names, and whether it can name
// one at all.
func (t *Table) slotIndex(key uint32) (uint32, bool) {
	v := t.perm.slot(KeyIndex(key))
	idx := v % t.limit
	return idx, idx != 0 && v/t.limit < t.gens
}

// FreshRKey returns an rkey for w's next bind with a fresh, unpredictable
// key byte: what a Type 1 bind verb asks for, since it must tell the
// consumer the window's new rkey before the send queue executes the bind.
func (w *Window) FreshRKey() uint32 {
	t := w.t
	t.mu.Lock()
	defer t.mu.Unlock()
	return makeKey(KeyIndex(w.RKey()), t.keys.fresh(&t.slot(w.index).hist))
}
