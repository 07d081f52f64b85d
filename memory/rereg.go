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
	var sh *Shared
	var base uint64
	if c.Mem != nil {
		var err error
		if sh, base, err = t.prepare(c.Mem, c.IOVA, c.Access); err != nil {
			return nil, err
		}
	} else if err := c.Access.ValidateRegion(); err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.reregisterable(r); err != nil {
		releaseShared(sh)
		return nil, err
	}
	old := r.cur.Load()
	mem := c.Mem
	if mem == nil {
		// The same memory: one more reference on its mapping, taken
		// while the old registration still holds one (the mapping's
		// owner may have closed it, as rnicd does once registered).
		mem, base, sh = old.mem, old.base, old.pin.shared
		if sh != nil {
			sh.refs.Add(1)
		}
	}
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
	if r.fast || r.cur.Load() == nil {
		return fmt.Errorf("memory: reregister: a fast-register MR: %w", ErrInvalidArgument)
	}
	if r.windows > 0 {
		return fmt.Errorf("memory: reregister MR %#x: %d windows bound: %w", r.LKey(), r.windows, ErrBusy)
	}
	return nil
}
