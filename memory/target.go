// What a key resolves to (a target: an MR registration or a window binding)
// and the reference count (pin) that keeps its memory mapped while a DMA is
// in flight. Targets are immutable once published, apart from their dead
// flag, so lock-free lookups can read them safely; a re-registration or
// re-bind publishes a new target.

package memory

import "sync/atomic"

type targetKind uint8

const (
	kindMR  targetKind = iota // a memory region (usable as lkey and rkey)
	kindMW1                   // a Type 1 memory window (rkey only, PD-bound)
	kindMW2                   // a Type 2B memory window (rkey only, QP-bound)
)

// target is one key's view of memory: the wire address base maps to mem[0]
// and the key grants access to exactly mem, nothing else.
type target struct {
	key    uint32
	pd     PD
	qpn    uint32 // QP a Type 2B window is bound to
	kind   targetKind
	access Access
	base   uint64 // wire address of mem[0]: the iova, or 0 when zero-based
	mem    []byte // the accessible bytes; cap == len
	pin    *pin   // the MR registration's reference count (shared by its windows)
	region *Region
	window *Window
	dead   atomic.Bool // set once, when deregistered, invalidated or unbound
}

// span returns the offset into tg.mem of the n bytes at wire address va, or
// false if they are not all inside. It cannot overflow: it never computes
// va+n.
func (tg *target) span(va, n uint64) (uint64, bool) {
	size := uint64(len(tg.mem))
	off := va - tg.base
	if va < tg.base || off > size || n > size-off {
		return 0, false
	}
	return off, true
}

// pin counts the references on one registration's memory: one for the
// registration itself, while valid, plus one per held Ref. When it drops to
// zero the memory is no longer used: a Shared backing is released and done
// is closed. A pin at zero never comes back.
type pin struct {
	refs   atomic.Int64
	shared *Shared // nil for Go memory
	done   chan struct{}
}

func newPin(sh *Shared) *pin {
	p := &pin{shared: sh, done: make(chan struct{})}
	p.refs.Store(1)
	return p
}

// tryAcquire takes a reference unless the count already reached zero.
func (p *pin) tryAcquire() bool {
	for {
		n := p.refs.Load()
		if n <= 0 {
			return false
		}
		if p.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func (p *pin) release() {
	switch n := p.refs.Add(-1); {
	case n == 0:
		if p.shared != nil {
			_ = p.shared.release() // nobody to report an munmap failure to
		}
		close(p.done)
	case n < 0:
		panic("memory: reference released more often than acquired")
	}
}

// atomicTarget is an object's current (or last) target and key, readable
// without the table mutex.
type atomicTarget struct {
	p   atomic.Pointer[target]
	key atomic.Uint32
}

func (a *atomicTarget) Load() *target { return a.p.Load() }

func (a *atomicTarget) set(tg *target) {
	a.p.Store(tg)
	a.key.Store(tg.key)
}
