// Settling the completion rings when a QP goes to RESET. A QP reset and
// brought up again must not find the completions of its former life
// (the flushes of its error) in its CQs: mlx4 and mlx5 clean the CQs of
// the QP's entries at RESET, and rdma-core's tests rely on it. The
// client cleans its rings (the drop-in's cqclean.c) once the reply comes;
// for that, what the engine already completed must be in the rings by
// then, not still waiting for a mover to wake.

package server

// settle moves what c's ibv CQ holds into the ring now, its mover
// stopped meanwhile; what does not fit stays for the mover, as always.
func (c *cqObj) settle() {
	c.halt()
	c.locked(func() {
		moved, bad, _ := c.move()
		c.fire(moved, bad)
	})
	c.start()
}

// settleCQs settles every CQ of the session (the QP's are among them; a
// reset is rare enough not to look for which).
func (s *Session) settleCQs() {
	for _, o := range s.objectsOf(kindCQ) {
		o.(*cqObj).settle()
	}
}
