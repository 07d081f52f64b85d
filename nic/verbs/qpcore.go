package verbs

import "sync"

// QPCore is what every engine's QP holds alike, embedded in it: the
// configuration it was created with, the lock that serialises it, its
// state and the attributes last modified. The fields are the engine's
// alone: exported only so that both engines can embed one definition.
type QPCore struct {
	Cfg QPConfig
	// Mu guards CurState, Attr and the engine's own QP state.
	Mu       sync.Mutex
	CurState QPState
	Attr     QPAttr
}

// QPN implements Engine.
func (c *QPCore) QPN() uint32 { return c.Cfg.QPN }

// State implements Engine.
func (c *QPCore) State() QPState {
	c.Mu.Lock()
	defer c.Mu.Unlock()
	return c.CurState
}

// QueryLocked is the shared part of Engine.Query (QPConfig.QueryAttr of
// the current state and attributes). Caller holds Mu.
func (c *QPCore) QueryLocked() QPAttr { return c.Cfg.QueryAttr(c.Attr, c.CurState) }
