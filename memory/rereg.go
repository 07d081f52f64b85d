// Re-registration (ibv_rereg_mr): a region gets new memory, a new
// protection domain or new access rights and keeps its key, as mlx5 keeps
// it, so that peers holding the rkey need not be told again.

package memory

import "fmt"

// Rereg says what a re-registration changes. A nil Mem keeps the memory
// and its addresses (Mem, IOVA are then ignored).
type Rereg struct {
	PD     PD
	Mem    []byte
	IOVA   uint64
	Access Access
}

// Reregister makes c the registration of r under r's key. The previous
// registration dies at once: a lookup finds the new one, and memory a DMA
// holds through the old one stays mapped until that Ref is released; the
// returned channel is closed then. r must be a live, non-fast region with
// no windows bound (ErrBusy). On error r is unchanged.
func (t *Table) Reregister(r *Region, c Rereg) (<-chan struct{}, error) {
	old := r.cur.Load()
	if old == nil {
		return nil, fmt.Errorf("memory: reregister: %w", ErrInvalidArgument)
	}
	mem, iova := c.Mem, c.IOVA
	if mem == nil {
		mem, iova = old.mem, old.base
	}
	sh, base, err := t.prepare(mem, iova, c.Access)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.reregisterable(r); err != nil {
		releaseShared(sh)
		return nil, err
	}
	old = r.cur.Load()
	tg := &target{
		key:    old.key,
		pd:     c.PD,
		kind:   kindMR,
		access: c.Access,
		base:   base,
		mem:    mem[:len(mem):len(mem)],
		pin:    newPin(sh),
		region: r,
	}
	r.pd = c.PD
	r.cur.set(tg)
	t.slot(r.index).cur.Store(tg)
	old.kill()
	return old.pin.done, nil
}

// reregisterable checks that r may be re-registered. Caller holds t.mu.
func (t *Table) reregisterable(r *Region) error {
	if err := t.owns(r); err != nil {
		return fmt.Errorf("memory: reregister: %w", err)
	}
	if r.fast {
		return fmt.Errorf("memory: reregister: a fast-register MR: %w", ErrInvalidArgument)
	}
	if r.windows > 0 {
		return fmt.Errorf("memory: reregister MR %#x: %d windows bound: %w", r.LKey(), r.windows, ErrBusy)
	}
	return nil
}
