// Protection domains (ibv_alloc_pd / ibv_dealloc_pd). A PD only groups
// objects: memory checks compare the memory.PD number that every MR, QP, AH
// and SRQ carries. The PD counts its users so it cannot be deallocated
// under them (ibv_dealloc_pd returns EBUSY, IBTA §10.6.1.2).

package nic

import (
	"sync"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
)

// PD is a protection domain.
type PD struct {
	d  *Device
	id memory.PD

	mu   sync.Mutex
	refs int // MRs, QPs, AHs and SRQs in the PD
	dead bool
}

// AllocPD allocates a protection domain (ibv_alloc_pd).
func (d *Device) AllocPD() (*PD, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.reserve(&d.pds, d.limits.MaxPD, "PD"); err != nil {
		return nil, err
	}
	// PD numbers are never reused within 2^32 allocations, so a stale
	// number held by an engine cannot match a new PD; 0 is skipped.
	d.nextPD++
	if d.nextPD == 0 {
		d.nextPD++
	}
	return &PD{d: d, id: d.nextPD}, nil
}

// DeallocPD deallocates pd (ibv_dealloc_pd). It fails with verbs.ErrBusy while
// MRs, QPs, AHs or SRQs still belong to it.
func (d *Device) DeallocPD(pd *PD) error {
	if pd == nil || pd.d != d {
		return errorf(verbs.ErrInvalid, "dealloc PD: not a PD of %s", d.name)
	}
	pd.mu.Lock()
	if pd.dead {
		pd.mu.Unlock()
		return errorf(verbs.ErrDestroyed, "dealloc PD %d", pd.id)
	}
	if pd.refs > 0 {
		n := pd.refs
		pd.mu.Unlock()
		return errorf(verbs.ErrBusy, "dealloc PD %d: %d objects still use it", pd.id, n)
	}
	pd.dead = true
	pd.mu.Unlock()
	d.release(&d.pds)
	return nil
}

// ID returns the PD's number, as memory.Table checks it.
func (pd *PD) ID() memory.PD { return pd.id }

// acquire records a new user of pd; it fails if pd is not pd of d or is
// deallocated.
func (pd *PD) acquire(d *Device) error {
	if pd == nil || pd.d != d {
		return errorf(verbs.ErrInvalid, "PD is not a PD of %s", d.name)
	}
	pd.mu.Lock()
	defer pd.mu.Unlock()
	if pd.dead {
		return errorf(verbs.ErrDestroyed, "PD %d", pd.id)
	}
	pd.refs++
	return nil
}

// put drops a user of pd.
func (pd *PD) put() {
	pd.mu.Lock()
	pd.refs--
	pd.mu.Unlock()
}
