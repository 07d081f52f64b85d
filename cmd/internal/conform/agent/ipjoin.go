// The IP side of a multicast attach. On RoCEv2 a group is an IP multicast
// group, and joining it is the consumer's business, not the verb's: IBTA
// leaves the join to the subnet administrator, and on RoCE rdma_cm's
// rdma_join_multicast sends it as IGMP/MLD (the kernel's cma_igmp_send).
// ibv_attach_mcast alone only tells the device. A device whose address
// the host's kernel holds (rxe) receives through the kernel's IP stack,
// which drops the datagrams of groups the host has not joined before any
// RoCE code sees them; so the agent, as the consumer, joins the group on
// that interface too, and keeps the membership until the QP is destroyed
// (not at the detach: what a detached QP receives is the device's to
// decide). A device the kernel does not hold the address of (rnic's TAP
// NICs, which send their own IGMP) needs no help, and gets none.

package agent

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/rnic/rnic/nic/ibv"
)

// joinIP joins group on the kernel interface that holds one of dev's
// GIDs' addresses, returning the socket whose membership it is (close it
// to leave), or nil when no interface holds one.
func joinIP(dev ibv.Device, group netip.Addr) (*net.UDPConn, error) {
	group = group.Unmap()
	ifi, err := gidInterface(dev, group.Is4())
	if ifi == nil || err != nil {
		return nil, err
	}
	network := "udp6"
	if group.Is4() {
		network = "udp4"
	}
	// Port 0: the socket takes none of the datagrams (RoCE's go to the
	// device's port 4791); it exists for its membership.
	c, err := net.ListenMulticastUDP(network, ifi, net.UDPAddrFromAddrPort(netip.AddrPortFrom(group, 0)))
	if err != nil {
		return nil, fmt.Errorf("join %v on %s: %w", group, ifi.Name, err)
	}
	return c, nil
}

// gidInterface is the interface holding an address (IPv4 if v4, else
// IPv6) in dev's GID table, or nil.
func gidInterface(dev ibv.Device, v4 bool) (*net.Interface, error) {
	gids := map[netip.Addr]bool{}
	for _, g := range dev.GIDs() {
		if g = g.Unmap(); g.IsValid() && !g.IsUnspecified() && g.Is4() == v4 {
			gids[g] = true
		}
	}
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("interfaces: %w", err)
	}
	for i := range ifs {
		addrs, err := ifs[i].Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil && gids[p.Addr().Unmap()] {
				return &ifs[i], nil
			}
		}
	}
	return nil, nil
}
