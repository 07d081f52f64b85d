package server

// Mapped returns what all clients together have mapped (MR mappings, MR
// and ring bytes) and the queue state of their QPs: budget.go's totals,
// which a reaped client must give back whole.
func (s *Server) Mapped() (mrs int, bytes, queue uint64) {
	s.budget.mu.Lock()
	defer s.budget.mu.Unlock()
	t := s.budget.total
	return t.mrs, t.bytes, t.queue
}

// TenantHeld returns what the clients of tenant name hold together (QPs,
// MRs, mapped bytes, queue state), which a reaped client must give back
// whole too.
func (s *Server) TenantHeld(name string) (qps, mrs int, bytes, queue uint64) {
	s.budget.mu.Lock()
	defer s.budget.mu.Unlock()
	u := s.tenants[name].use
	return u.qps, u.mrs, u.bytes, u.queue
}
