// Multicast UD (ibv_attach_mcast, ibv_detach_mcast) on devices that have
// it: an optional interface of QP, so that a backend without multicast
// (an iWARP device) simply does not implement it.

package ibv

import "net/netip"

// McastQP is a QP that can be attached to multicast groups. gid is the
// group's GID (an IPv4-mapped or IPv6 multicast address); lid is ignored on
// RoCE. A datagram sent to the group with remote QPN verbs.MulticastQPN
// reaches every QP attached to it, with its own Q_Key checked.
type McastQP interface {
	AttachMcast(gid netip.Addr, lid uint16) error
	DetachMcast(gid netip.Addr, lid uint16) error
}
