// Multicast groups: the kernel's IP multicast on the NIC's address.
//
// A socket bound to the NIC's unicast address never sees datagrams to a
// group, so each group joined gets a listening socket of its own, bound to
// (group, Port) with SO_REUSEADDR so that every rnic NIC of the host in
// the group gets its copy, and a member of the group on the interface that
// owns the NIC's address (IP_ADD_MEMBERSHIP, IPV6_JOIN_GROUP). Its reader
// rebuilds frames as the main socket's does: IP_PKTINFO gives the group as
// the destination, so the rebuilt IP header is the one the ICRC covers.
// Sending needs nothing new: a datagram to a group from a socket bound to
// the NIC's address leaves by that address's interface, and the kernel
// loops it back to the host's members (IP_MULTICAST_LOOP is on by
// default), this NIC included. That holds for IPv4 on loopback addresses
// too; an IPv6 group needs an interface with IPv6 multicast, which lo is
// not (Linux routes ff00::/8 only on the others).

package udp

import (
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/rnic/rnic/transport"
)

var _ transport.GroupMember = (*Endpoint)(nil)

// groupSock is a joined group's socket and its receive loop.
type groupSock struct {
	s    *sock
	done chan struct{} // closed when the loop has returned
}

// JoinGroup implements transport.GroupMember. Joining a group twice is
// harmless.
func (e *Endpoint) JoinGroup(group netip.Addr) error {
	group = group.Unmap()
	if !group.IsMulticast() || group.Is4() != e.cfg.Addr.Is4() {
		return fmt.Errorf("udp: join %v from %v: not a multicast group of the address's family", group, e.cfg.Addr)
	}
	e.sys.mu.Lock()
	defer e.sys.mu.Unlock()
	if e.closed.Load() {
		return transport.ErrClosed
	}
	if e.sys.groups[group] != nil {
		return nil
	}
	s, err := e.openSockAt(group, e.cfg.Port, true, true)
	if err != nil {
		return fmt.Errorf("udp: join %v: %w", group, err)
	}
	g := &groupSock{s: s, done: make(chan struct{})}
	r := newReader(e, s)
	go func() {
		defer close(g.done)
		r.run()
	}()
	if e.sys.groups == nil {
		e.sys.groups = make(map[netip.Addr]*groupSock)
	}
	e.sys.groups[group] = g
	return nil
}

// LeaveGroup implements transport.GroupMember: closing the group's socket
// drops the membership.
func (e *Endpoint) LeaveGroup(group netip.Addr) error {
	group = group.Unmap()
	e.sys.mu.Lock()
	g := e.sys.groups[group]
	delete(e.sys.groups, group)
	e.sys.mu.Unlock()
	if g == nil {
		return nil
	}
	g.stop()
	return nil
}

// LoopsGroups implements transport.GroupMember: the kernel loops a
// group's datagrams back to the host's members.
func (e *Endpoint) LoopsGroups() bool { return true }

// stop closes the group's socket and waits for its loop to return.
func (g *groupSock) stop() {
	g.s.leaving.Store(true)
	g.s.f.Close()
	<-g.done
}

// closeGroups leaves every group (when the endpoint closes).
func (e *Endpoint) closeGroups() {
	e.sys.mu.Lock()
	gs := e.sys.groups
	e.sys.groups = nil
	e.sys.mu.Unlock()
	for _, g := range gs {
		g.stop()
	}
}

// joinOn makes the socket fd a member of group on the interface that owns
// the endpoint's address.
func (e *Endpoint) joinOn(fd int, group netip.Addr) error {
	if group.Is4() {
		mreq := &unix.IPMreqn{Multiaddr: group.As4(), Address: e.cfg.Addr.As4()}
		if err := unix.SetsockoptIPMreqn(fd, unix.IPPROTO_IP, unix.IP_ADD_MEMBERSHIP, mreq); err != nil {
			return fmt.Errorf("IP_ADD_MEMBERSHIP %v on %v: %w", group, e.cfg.Addr, err)
		}
		return nil
	}
	ifindex, err := interfaceOf(e.cfg.Addr)
	if err != nil {
		return err
	}
	mreq := &unix.IPv6Mreq{Multiaddr: group.As16(), Interface: uint32(ifindex)}
	if err := unix.SetsockoptIPv6Mreq(fd, unix.IPPROTO_IPV6, unix.IPV6_JOIN_GROUP, mreq); err != nil {
		return fmt.Errorf("IPV6_JOIN_GROUP %v on interface %d: %w", group, ifindex, err)
	}
	return nil
}

// interfaceOf returns the index of the interface that has addr (IPv6 has
// no join by address).
func interfaceOf(addr netip.Addr) (int, error) {
	has, _, err := interfacesWith(addr)
	if err != nil {
		return 0, err
	}
	if has == nil {
		return 0, fmt.Errorf("no interface has %v", addr)
	}
	return has.Index, nil
}
