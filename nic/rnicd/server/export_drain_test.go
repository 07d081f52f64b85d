package server

import (
	"testing"

	"github.com/rnic/rnic/nic/ibv"
)

// HaltUDDrainers stops the drainers of every UD QP srv serves, so that
// what a client posts stays in its rings, as on a daemon too busy to run
// them; restart starts them again.
func HaltUDDrainers(srv *Server) (restart func()) {
	srv.mu.Lock()
	var halted []*drainer
	for s := range srv.sessions {
		for _, o := range s.objectsOf(kindQP) {
			if d := o.(*qpObj).d; d.ud {
				d.halt()
				halted = append(halted, d)
			}
		}
	}
	srv.mu.Unlock()
	return func() {
		for _, d := range halted {
			d.start()
		}
	}
}

// AfterFireMove has f run whenever an in-process CQ's fired arm has moved
// its completions and not yet armed the CQ again (fireNow), until the test
// ends. Set it before the daemon starts.
func AfterFireMove(t testing.TB, f func(ibv.CQ)) {
	afterFireMove = f
	t.Cleanup(func() { afterFireMove = nil })
}
