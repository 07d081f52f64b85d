// Multicast UD (IBTA §10.5; RoCEv2 Annex A17.4.5.4): a datagram to a
// multicast group's IP address with DestQP 0xFFFFFF is delivered to every
// QP of the device attached to the group, each checking its own state and
// Q_Key as for a datagram of its own; nic has checked the attach rules and
// limits. A group's frames go to the Ethernet address of its IP address
// (RFC 1112 §6.4: 01:00:5e and the low 23 bits; RFC 2464 §7: 33:33 and the
// low 32 bits).
//
// As with rxe, whose multicast the kernel loops back, a device's own
// datagrams to a group reach its own attached QPs, the sender's included
// if it is attached: through the link when it loops them
// (transport.GroupMember.LoopsGroups), otherwise handed over here.

package roce

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce/wire"
)

// mcastGroups maps a group's IP address (unmapped) to its attached QPs.
// The receive path reads it without a lock: it is replaced, never changed.
type mcastGroups map[netip.Addr][]*QP

var _ verbs.McastProvider = (*Stack)(nil)

// AttachMcast implements verbs.McastProvider: the first QP of a group
// makes the link join it.
func (s *Stack) AttachMcast(group netip.Addr, qpn uint32) error {
	ip := group.Unmap()
	s.mcastMu.Lock()
	defer s.mcastMu.Unlock()
	qp := s.lookup(qpn)
	if qp == nil {
		return fmt.Errorf("roce: attach QP %#x to %v: %w", qpn, ip, verbs.ErrInvalid)
	}
	old := s.groups()
	if len(old[ip]) == 0 {
		if m := s.cfg.Groups; m != nil {
			if err := m.JoinGroup(ip); err != nil {
				return fmt.Errorf("roce: join %v: %w", ip, err)
			}
		}
	}
	next := maps(old)
	next[ip] = append(slices.Clip(old[ip]), qp)
	s.mcast.Store(&next)
	return nil
}

// DetachMcast implements verbs.McastProvider: the last QP of a group makes
// the link leave it.
func (s *Stack) DetachMcast(group netip.Addr, qpn uint32) {
	ip := group.Unmap()
	s.mcastMu.Lock()
	defer s.mcastMu.Unlock()
	old := s.groups()
	members := slices.DeleteFunc(slices.Clone(old[ip]), func(q *QP) bool { return q.Cfg.QPN == qpn })
	next := maps(old)
	if len(members) > 0 {
		next[ip] = members
	} else {
		delete(next, ip)
		if m := s.cfg.Groups; m != nil && len(old[ip]) > 0 {
			_ = m.LeaveGroup(ip) // leaving a group cannot fail in a way a detach could report
		}
	}
	s.mcast.Store(&next)
}

// groups returns the current group table (never nil).
func (s *Stack) groups() mcastGroups {
	if g := s.mcast.Load(); g != nil {
		return *g
	}
	return nil
}

// maps copies a group table for a change.
func maps(g mcastGroups) mcastGroups {
	next := make(mcastGroups, len(g)+1)
	for k, v := range g {
		next[k] = v
	}
	return next
}

// mcastInput delivers a frame sent to a multicast address to the QPs
// attached to its group: only UD datagrams to the multicast QPN qualify.
func (s *Stack) mcastInput(f *wire.Frame) {
	bth := f.Packet.BTH()
	members := s.groups()[f.DstAddr().Unmap()]
	switch {
	case len(members) == 0:
		s.ctr.incWire(wire.ErrBadIPHeader) // not a group of this device: as a foreign unicast address
		return
	case bth.DestQP() != verbs.MulticastQPN || f.Packet.Info().Transport != wire.TransportUD:
		s.ctr.inc(NoQP)
		return
	case bth.PKey() != wire.DefaultPKey:
		s.ctr.inc(BadPKey)
		return
	}
	for _, qp := range members {
		qp.receive(f)
	}
}

// loopsGroups reports whether the link hands the device's own multicast
// back to it.
func (s *Stack) loopsGroups() bool {
	return s.cfg.Groups != nil && s.cfg.Groups.LoopsGroups()
}

// mcastLoop hands a sealed datagram the QP is sending to a group the
// device has QPs in to those QPs, when the link will not: a copy, later,
// on the clock, since the sender holds its QP's lock.
func (qp *QP) mcastLoop(frame []byte) {
	s := qp.s
	if s.loopsGroups() || len(s.groups()[qp.encap.Dst]) == 0 {
		return
	}
	qp.encap.Seal(frame)
	c := slices.Clone(frame)
	s.cfg.Clock.AfterFunc(0, func() { s.Input(c) })
}

// mcastMAC is the Ethernet address IP multicast to dst goes to.
func mcastMAC(dst netip.Addr) [6]byte {
	if dst.Is4() {
		a := dst.As4()
		return [6]byte{0x01, 0x00, 0x5e, a[1] & 0x7f, a[2], a[3]}
	}
	a := dst.As16()
	return [6]byte{0x33, 0x33, a[12], a[13], a[14], a[15]}
}
