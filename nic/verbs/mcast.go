// Multicast UD (IBTA §10.5, ibv_attach_mcast): the rule for a group's GID
// and the optional interface of a Provider whose engine delivers datagrams
// sent to a group.

package verbs

import "net/netip"

// MulticastQPN is the destination QP of a datagram sent to a multicast
// group (IBTA §9.6.1.3.2: 0xFFFFFF), delivered to every QP attached.
const MulticastQPN = 0xFFFFFF

// IsMulticastGID reports whether gid names a multicast group: an IPv6
// multicast address (ff00::/8) or an IPv4-mapped 224.0.0.0/4 address, the
// rule the kernel applies to ibv_attach_mcast on a RoCE port.
func IsMulticastGID(gid netip.Addr) bool {
	return gid.IsValid() && gid.Unmap().IsMulticast()
}

// McastProvider is a Provider whose engine delivers multicast: a datagram
// to a group with DestQP MulticastQPN reaches every QP attached to it.
// nic checks the verbs rules and the limits before calling it.
type McastProvider interface {
	Provider
	// AttachMcast adds the QP numbered qpn to group (an IPv4-mapped or
	// IPv6 GID); the first QP of a group makes the device join it.
	AttachMcast(group netip.Addr, qpn uint32) error
	// DetachMcast removes the QP from group; the last one leaves it.
	DetachMcast(group netip.Addr, qpn uint32)
}
