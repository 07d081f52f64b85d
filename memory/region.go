// Memory regions: registration over Go memory or Shared memory,
// deregistration (immediate for the key, deferred for the memory while a DMA
// holds it), and fast-register MRs, whose key can be invalidated and the MR
// re-registered under the same index (IB_WR_REG_MR / LOCAL_INV /
// SEND_WITH_INV, also how iWARP STags are used).

package memory

import (
	"fmt"
	"math"
	"sync/atomic"
)

// Region is a registered memory region. Its methods are safe for concurrent
// use.
type Region struct {
	t     *Table
	index uint32
	pd    PD
	fast  bool
	cur   atomicTarget // current or last registration; nil for a fast MR never registered

	watch   regionWatch // Watch's channel
	watched atomic.Bool // set once watch.c is made

	// guarded by t.mu
	windows int  // windows bound to this region
	gone    bool // deregistered
}

// Register registers mem in protection domain pd with the given access. Wire
// and SGE addresses of the region run from iova to iova+len(mem)-1, or from
// 0 when access includes ZeroBased (iova is then ignored). The memory must
// stay valid while the region lives: Go memory is kept alive by the region;
// a slice of a Shared is detected and pins the mapping (Shared.Close is then
// deferred until the region is gone and idle).
func (t *Table) Register(pd PD, mem []byte, iova uint64, access Access) (*Region, error) {
	sh, base, err := t.prepare(mem, iova, access)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.regions >= t.cfg.MaxRegions {
		releaseShared(sh)
		return nil, fmt.Errorf("memory: register: %d regions: %w", t.regions, ErrNoResources)
	}
	t.regions++
	r := &Region{t: t, index: t.allocIndex(), pd: pd}
	t.publish(r, mem, base, access, sh)
	return r, nil
}

// AllocFastMR allocates a fast-register MR in pd: a key index with no
// memory, whose keys resolve to nothing until FastRegister.
func (t *Table) AllocFastMR(pd PD) (*Region, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.regions >= t.cfg.MaxRegions {
		return nil, fmt.Errorf("memory: alloc fast MR: %d regions: %w", t.regions, ErrNoResources)
	}
	t.regions++
	r := &Region{t: t, index: t.allocIndex(), pd: pd, fast: true}
	r.cur.key.Store(t.newKey(r.index))
	return r, nil
}

// FastRegister maps memory into a fast-register MR that is free (never
// registered, or invalidated), with the same rules as Register, and returns
// its new key: the index is kept, the key byte is fresh, and the previous key
// stays dead.
func (t *Table) FastRegister(r *Region, mem []byte, iova uint64, access Access) (uint32, error) {
	sh, base, err := t.prepare(mem, iova, access)
	if err != nil {
		return 0, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.owns(r); err != nil {
		releaseShared(sh)
		return 0, fmt.Errorf("memory: fast register: %w", err)
	}
	if !r.fast {
		releaseShared(sh)
		return 0, fmt.Errorf("memory: fast register: not a fast-register MR: %w", ErrInvalidArgument)
	}
	if tg := r.cur.Load(); tg != nil && !tg.dead.Load() {
		releaseShared(sh)
		return 0, fmt.Errorf("memory: fast register: MR %#x is valid, invalidate it first: %w", tg.key, ErrBusy)
	}
	return t.publish(r, mem, base, access, sh), nil
}

// Deregister removes r: its key stops resolving at once. Memory a DMA still
// holds through a Ref stays mapped until that Ref is released (see Drained).
// It fails with ErrBusy while windows are bound to r.
func (t *Table) Deregister(r *Region) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.owns(r); err != nil {
		return fmt.Errorf("memory: deregister: %w", err)
	}
	if r.windows > 0 {
		return fmt.Errorf("memory: deregister MR %#x: %d windows bound: %w", r.LKey(), r.windows, ErrBusy)
	}
	t.freeIndex(r.index) // first: a racing lookup then sees BadKey, not Invalidated
	if tg := r.cur.Load(); tg != nil {
		tg.kill()
	}
	r.gone = true
	t.regions--
	return nil
}

// prepare validates a registration and pins a Shared backing, returning the
// wire address of mem[0].
func (t *Table) prepare(mem []byte, iova uint64, access Access) (*Shared, uint64, error) {
	if err := access.ValidateRegion(); err != nil {
		return nil, 0, err
	}
	n := uint64(len(mem))
	if n == 0 {
		return nil, 0, fmt.Errorf("memory: register: empty region: %w", ErrInvalidArgument)
	}
	if n > t.cfg.MaxRegionSize {
		return nil, 0, fmt.Errorf("memory: register: %d bytes > max %d: %w", n, t.cfg.MaxRegionSize, ErrTooLarge)
	}
	base := iova
	if access&ZeroBased != 0 {
		base = 0
	}
	if base > math.MaxUint64-(n-1) {
		return nil, 0, fmt.Errorf("memory: register: iova %#x + %d bytes overflows: %w", base, n, ErrInvalidArgument)
	}
	sh, err := sharedFor(mem)
	if err != nil {
		return nil, 0, err
	}
	return sh, base, nil
}

// publish makes a new registration of r current and returns its key. Caller
// holds t.mu.
func (t *Table) publish(r *Region, mem []byte, base uint64, access Access, sh *Shared) uint32 {
	tg := &target{
		key:    t.newKey(r.index),
		pd:     r.pd,
		kind:   kindMR,
		access: access,
		base:   base,
		mem:    mem[:len(mem):len(mem)],
		pin:    newPin(sh),
		region: r,
	}
	r.cur.set(tg)
	t.slot(r.index).cur.Store(tg)
	return tg.key
}

// owns checks that r is a live region of t. Caller holds t.mu.
func (t *Table) owns(r *Region) error {
	if r == nil || r.t != t {
		return fmt.Errorf("region of another table: %w", ErrInvalidArgument)
	}
	if r.gone {
		return fmt.Errorf("region deregistered: %w", ErrInvalidArgument)
	}
	return nil
}

// kill marks tg dead and, for a region registration, drops the registration
// reference. It is idempotent.
func (tg *target) kill() {
	if tg.dead.CompareAndSwap(false, true) && tg.kind == kindMR {
		tg.pin.release()
	}
}

// LKey returns the region's lkey (the last one, for a fast-register MR).
func (r *Region) LKey() uint32 { return r.cur.key.Load() }

// RKey returns the region's rkey, which equals its lkey.
func (r *Region) RKey() uint32 { return r.cur.key.Load() }

// PD returns the region's protection domain.
func (r *Region) PD() PD {
	if tg := r.cur.Load(); tg != nil {
		return tg.pd // a re-registration may have changed it
	}
	return r.pd
}

// Fast reports whether r is a fast-register MR.
func (r *Region) Fast() bool { return r.fast }

// Valid reports whether r's key currently resolves (registered and not
// invalidated).
func (r *Region) Valid() bool {
	tg := r.cur.Load()
	return tg != nil && !tg.dead.Load()
}

// Access returns the access flags of the current (or last) registration.
func (r *Region) Access() Access {
	if tg := r.cur.Load(); tg != nil {
		return tg.access
	}
	return 0
}

// IOVA returns the wire address of the region's first byte (0 when
// zero-based).
func (r *Region) IOVA() uint64 {
	if tg := r.cur.Load(); tg != nil {
		return tg.base
	}
	return 0
}

// Len returns the region's length in bytes.
func (r *Region) Len() uint64 {
	if tg := r.cur.Load(); tg != nil {
		return uint64(len(tg.mem))
	}
	return 0
}

// Drained returns a channel closed once the current (or last) registration
// of r is no longer valid and no Ref holds its memory. After Deregister, a
// caller that must guarantee, as ibv_dereg_mr does, that the NIC no longer
// touches the memory waits on it.
func (r *Region) Drained() <-chan struct{} {
	if tg := r.cur.Load(); tg != nil {
		return tg.pin.done
	}
	return closedChan
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()
