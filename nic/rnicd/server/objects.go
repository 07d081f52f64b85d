// A session's objects: one table per connection, so a handle names an
// object of this client or nothing, and the per-client limits counted as
// objects come and go.

package server

import (
	"fmt"

	"github.com/rnic/rnic/nic/rnicd/proto"
)

type objKind uint8

const (
	kindPD objKind = iota + 1
	kindMR
	kindCQ
	kindSRQ
	kindQP
	kindAH
	kindChannel
	kindMW
)

func (k objKind) String() string {
	return [...]string{"?", "PD", "MR", "CQ", "SRQ", "QP", "AH", "channel", "MW"}[min(int(k), 8)]
}

// object is a verbs object of a session.
type object interface {
	kind() objKind
	handle() uint32
	// destroy frees the object (the client asked, or reaping).
	destroy(s *Session, reaping bool) error
}

// newHandle returns a handle no live object of the session has; 0 is
// never one (it means "none" in requests).
func (s *Session) newHandle() uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		s.next++
		if _, used := s.objs[s.next]; s.next != 0 && !used {
			return s.next
		}
	}
}

func (s *Session) insert(o object) {
	s.mu.Lock()
	s.objs[o.handle()] = o
	s.mu.Unlock()
}

func (s *Session) remove(o object) {
	s.mu.Lock()
	delete(s.objs, o.handle())
	s.mu.Unlock()
}

// lookup returns the session's object h of type T.
func lookup[T object](s *Session, h uint32, what objKind) (T, error) {
	s.mu.RLock()
	o, ok := s.objs[h]
	s.mu.RUnlock()
	t, isT := o.(T)
	if !ok || !isT {
		var zero T
		return zero, fmt.Errorf("%w: %v handle %d", proto.ErrBadHandle, what, h)
	}
	return t, nil
}

// objectsOf returns the session's objects of one kind.
func (s *Session) objectsOf(k objKind) []object {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []object
	for _, o := range s.objs {
		if o.kind() == k {
			out = append(out, o)
		}
	}
	return out
}

// limitError names the limit a client reached.
func limitError(n any, what, flag string) error {
	return fmt.Errorf("%w: %v %s per client (rnicd %s)", proto.ErrLimit, n, what, flag)
}

// reserve counts one object of kind k (with bytes of MR mapping) against
// the client's limits; ring memory is counted apart (reserveRing).
func (s *Session) reserve(k objKind, bytes uint64) error {
	lim := &s.srv.limits
	s.mu.Lock()
	defer s.mu.Unlock()
	switch k {
	case kindQP:
		if s.qps >= lim.MaxQPs {
			return limitError(lim.MaxQPs, "QPs", "--max-qps")
		}
	case kindMR:
		if s.mrs >= lim.MaxMRs {
			return limitError(lim.MaxMRs, "MRs", "--max-mrs")
		}
		if s.mrBytes+bytes > lim.MaxMRBytes || s.mrBytes+bytes < bytes {
			return limitError(lim.MaxMRBytes, "bytes of registered memory", "--max-mr-bytes")
		}
	default:
		if s.objects >= lim.MaxObjects {
			return limitError(lim.MaxObjects, "PDs, CQs, SRQs, AHs and MWs", "--max-objects")
		}
	}
	if k == kindMR {
		if err := s.take(mapped{mrs: 1, bytes: bytes}); err != nil {
			return err
		}
	}
	switch k {
	case kindQP:
		s.qps++
	case kindMR:
		s.mrs++
		s.mrBytes += bytes
		s.counts.mrs.Add(1)
		s.counts.mrBytes.Add(bytes)
	default:
		s.objects++
	}
	return nil
}

// unreserve undoes reserve.
func (s *Session) unreserve(k objKind, bytes uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch k {
	case kindQP:
		s.qps--
	case kindMR:
		s.mrs--
		s.mrBytes -= bytes
		s.give(mapped{mrs: 1, bytes: bytes})
	default:
		s.objects--
	}
}

// reserveRing counts bytes of ring memory (a ring's memfd, or a chunk of
// the ring arena) against the client's limit.
func (s *Session) reserveRing(bytes uint64) error {
	lim := &s.srv.limits
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ring+bytes > lim.MaxRingBytes || s.ring+bytes < bytes {
		return limitError(lim.MaxRingBytes, "bytes of queue rings", "--max-ring-bytes")
	}
	if err := s.take(mapped{bytes: bytes}); err != nil {
		return err
	}
	s.ring += bytes
	return nil
}

// unreserveRing undoes reserveRing.
func (s *Session) unreserveRing(bytes uint64) {
	s.mu.Lock()
	s.ring -= bytes
	s.give(mapped{bytes: bytes})
	s.mu.Unlock()
}

// take counts d against the budgets of the client's uid, its tenant and
// the daemon; give returns it.
func (s *Session) take(d mapped) error { return s.srv.budget.take(s.cred.Uid, s.tenant, d) }
func (s *Session) give(d mapped)       { s.srv.budget.give(s.cred.Uid, s.tenant, d) }
