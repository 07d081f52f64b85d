// The key table: which index holds which region or window, and the limits.
// Lookups on the packet path are lock-free (an atomic pointer per slot, in
// lazily allocated pages); every change (register, bind, invalidate, ...)
// takes the table mutex, so control operations are serialised and the data
// path never waits for them.

package memory

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// PD names a protection domain. PDs are allocated by the caller (the nic
// package); every region and window belongs to exactly one, and every lookup
// checks it.
type PD uint32

// Defaults for Config fields left zero.
const (
	DefaultMaxRegions    = 1 << 20 // as rxe's max_mr
	DefaultMaxWindows    = 1 << 20 // as rxe's max_mw
	DefaultMaxRegionSize = 1 << 40 // 1 TiB
)

// Config sets the limits of a Table. Zero fields take the defaults.
type Config struct {
	MaxRegions    int    // memory regions at once, fast-register MRs included
	MaxWindows    int    // memory windows at once
	MaxRegionSize uint64 // bytes in one region
	// Seed, if set, seeds every random choice of the table (key bytes and
	// the placement of key indices), so that a simulation replays exactly.
	// Nil, as everywhere but in the simulated mode: seeded from crypto/rand,
	// so keys are unpredictable.
	Seed *[32]byte
}

const (
	pageBits = 10
	pageSize = 1 << pageBits
	pageMask = pageSize - 1
	// reuseAfter is how many freed indices wait before one is reused, while
	// never-used indices remain: it spreads reuse over many slots so a stale
	// key meets a new occupant of its slot as late as possible.
	reuseAfter = 64
)

// slot is one key index.
type slot struct {
	cur  atomic.Pointer[target] // what the index resolves to; nil if nothing
	hist keyHistory             // guarded by Table.mu
	gen  uint32                 // occupant generation (perm.go); guarded by Table.mu
}

type page [pageSize]slot

// Table holds the regions and windows of one device and resolves keys. It is
// safe for concurrent use; lookups never block.
type Table struct {
	cfg   Config
	limit uint32 // slots are 1 .. limit-1
	gens  uint32 // generations of a slot's key index: (2^24) / limit, at least 1
	pages []atomic.Pointer[page]

	perm indexPerm // slot ↔ key index (perm.go); fixed at creation

	keyFails keyFailures // failed remote key checks per peer (keyfail.go)

	mu       sync.Mutex
	keys     keySource
	next     uint32   // lowest never-used index
	free     []uint32 // freed indices, oldest first from freeHead
	freeHead int
	regions  int
	windows  int
	windowAt map[uint32]*Window // allocated windows by slot index (window_key.go)
}

// NewTable returns an empty table with the limits of cfg.
func NewTable(cfg Config) (*Table, error) {
	if cfg.MaxRegions == 0 {
		cfg.MaxRegions = DefaultMaxRegions
	}
	if cfg.MaxWindows == 0 {
		cfg.MaxWindows = DefaultMaxWindows
	}
	if cfg.MaxRegionSize == 0 {
		cfg.MaxRegionSize = DefaultMaxRegionSize
	}
	if cfg.MaxRegions < 0 || cfg.MaxWindows < 0 || cfg.MaxRegions+cfg.MaxWindows > MaxKeyIndex {
		return nil, fmt.Errorf("memory: %d regions + %d windows exceed the %d key indices: %w",
			cfg.MaxRegions, cfg.MaxWindows, MaxKeyIndex, ErrInvalidArgument)
	}
	ks, err := newKeySource(cfg.Seed)
	if err != nil {
		return nil, err
	}
	cfg.Seed = nil // Config() does not hand the secret out
	limit := uint32(cfg.MaxRegions+cfg.MaxWindows) + 1
	return &Table{
		cfg:      cfg,
		limit:    limit,
		gens:     (MaxKeyIndex + 1) / limit,
		pages:    make([]atomic.Pointer[page], (limit+pageMask)/pageSize),
		perm:     newIndexPerm(&ks),
		keys:     ks,
		next:     1,
		windowAt: make(map[uint32]*Window),
	}, nil
}

// Config returns the table's limits, defaults filled in.
func (t *Table) Config() Config { return t.cfg }

// Counts returns the number of regions and windows currently allocated.
func (t *Table) Counts() (regions, windows int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.regions, t.windows
}

// lookup returns what key resolves to, or nil when the index is unused or
// the key byte does not match. It never blocks.
func (t *Table) lookup(key uint32) *target {
	v := t.perm.slot(KeyIndex(key))
	idx := v % t.limit // the generation, v / limit, is checked with the whole key below
	if idx == 0 || v/t.limit >= t.gens {
		return nil
	}
	p := t.pages[idx>>pageBits].Load()
	if p == nil {
		return nil
	}
	tg := p[idx&pageMask].cur.Load()
	if tg == nil || tg.key != key {
		return nil
	}
	return tg
}

// slot returns the slot of an allocated index. Caller holds t.mu.
func (t *Table) slot(idx uint32) *slot {
	return &t.pages[idx>>pageBits].Load()[idx&pageMask]
}

// allocIndex reserves an index. Caller holds t.mu and has checked the limits,
// so an index is always available.
func (t *Table) allocIndex() uint32 {
	if nfree := len(t.free) - t.freeHead; nfree > reuseAfter || (nfree > 0 && t.next >= t.limit) {
		idx := t.free[t.freeHead]
		t.freeHead++
		s := t.slot(idx)
		s.gen = (s.gen + 1) % t.gens // the new occupant's keys get another index
		if t.freeHead > len(t.free)/2 && t.freeHead > 64 {
			t.free = append(t.free[:0], t.free[t.freeHead:]...)
			t.freeHead = 0
		}
		return idx
	}
	idx := t.next
	t.next++
	if pg := &t.pages[idx>>pageBits]; pg.Load() == nil {
		pg.Store(new(page))
	}
	return idx
}

// freeIndex returns an index for reuse. Caller holds t.mu.
func (t *Table) freeIndex(idx uint32) {
	t.slot(idx).cur.Store(nil)
	t.free = append(t.free, idx)
}

// newKey draws a fresh key for slot idx: the key index of the slot's
// current occupant and a fresh key byte. Caller holds t.mu.
func (t *Table) newKey(idx uint32) uint32 {
	s := t.slot(idx)
	return makeKey(t.perm.wire(s.gen*t.limit+idx), t.keys.fresh(&s.hist))
}
