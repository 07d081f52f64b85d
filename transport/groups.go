package transport

import "net/netip"

// GroupMember is implemented by links that take part in IP multicast
// themselves: the embedded mode's link joins a group through a kernel
// socket, a TAP link announces the join with IGMP or MLD. An engine joins
// a group when the first of its QPs attaches to it and leaves when the
// last detaches. On a link without it (a point-to-point simulated wire)
// every frame reaches the peer anyway.
type GroupMember interface {
	// JoinGroup starts receiving the frames sent to group (an IPv4 or
	// IPv6 multicast address).
	JoinGroup(group netip.Addr) error
	// LeaveGroup stops it.
	LeaveGroup(group netip.Addr) error
	// LoopsGroups reports whether frames the device sends to a group it
	// joined come back to it through the link, as the kernel loops a
	// socket's multicast back to the host's members (IP_MULTICAST_LOOP).
	// When false, an engine hands its own QPs their copy itself.
	LoopsGroups() bool
}
