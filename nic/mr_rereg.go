// Re-registration of a memory region (ibv_rereg_mr): new memory, a new
// PD or new access rights under the same keys (memory.Table.Reregister).

package nic

import (
	"fmt"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
)

// MRChange is what ReregMR changes. A nil Buf keeps the memory and its
// addresses; a nil PD keeps the PD.
type MRChange struct {
	PD     *PD
	Buf    []byte
	IOVA   uint64
	Access memory.Access
}

// ReregMR re-registers mr with c, keeping its lkey and rkey, as mlx5
// does (the kernel's rxe does not re-register at all). Like DeregMR it
// returns once no DMA uses the memory of the previous registration. It
// fails with verbs.ErrBusy while memory windows are bound to mr; on error mr
// is unchanged.
func (d *Device) ReregMR(mr *MR, c MRChange) error {
	if err := mr.live(d); err != nil {
		return fmt.Errorf("nic: rereg MR: %w", err)
	}
	pd := c.PD
	if pd == nil {
		pd = mr.PD()
	}
	if err := d.checkFlushAccess("rereg MR", c.Access); err != nil {
		return err
	}
	if err := pd.acquire(d); err != nil {
		return fmt.Errorf("nic: rereg MR: %w", err)
	}
	mr.mu.Lock()
	if mr.dead {
		mr.mu.Unlock()
		pd.put()
		return errorf(verbs.ErrDestroyed, "rereg MR %#x", mr.r.LKey())
	}
	drained, err := d.mem.Reregister(mr.r, memory.Rereg{PD: pd.id, Mem: c.Buf, IOVA: c.IOVA, Access: c.Access})
	if err != nil {
		mr.mu.Unlock()
		pd.put()
		return memErr("rereg MR", err)
	}
	old := mr.pd
	mr.pd = pd
	mr.mu.Unlock()
	old.put()
	<-drained
	return nil
}
