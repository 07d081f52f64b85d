// Invalidation of an rkey/lkey by LOCAL_INV or by a peer's SEND_WITH_INV
// (and iWARP's Send with Invalidate): the key stops resolving and the object
// becomes free for a new FastRegister or Bind. Only fast-register MRs and
// Type 2B windows can be invalidated, as in rxe.

package memory

// Invalidate invalidates key on behalf of QP qpn in protection domain pd. It
// succeeds for a fast-register MR with no bound windows and for a Type 2B
// window bound to qpn; invalidating an already invalidated key is Ok. It
// fails with BadKey, BadPD, BadQP, or CannotInvalidate (an ordinary MR, a
// Type 1 window, an MR with bound windows). Memory held by in-flight Refs
// stays mapped until they are released.
func (t *Table) Invalidate(pd PD, qpn uint32, key uint32) Fault {
	t.mu.Lock()
	defer t.mu.Unlock()
	tg := t.lookup(key)
	if tg == nil {
		return BadKey
	}
	if tg.pd != pd {
		return BadPD
	}
	switch tg.kind {
	case kindMR:
		if !tg.region.fast || tg.region.windows > 0 {
			return CannotInvalidate
		}
		tg.kill()
	case kindMW1:
		return CannotInvalidate
	case kindMW2:
		if tg.qpn != qpn {
			return BadQP
		}
		if tg.window.bound == tg {
			tg.window.unbind()
		}
	}
	return Ok
}
