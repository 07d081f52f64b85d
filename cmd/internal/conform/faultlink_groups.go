// The self-test DUT's link in IP multicast: FaultLink passes the engine's
// joins and leaves to the link it wraps (a kernel UDP socket joins the
// group; a simulated wire needs nothing), and a Break may keep the link in
// its groups after the engine left them, as a DUT whose detach does not
// take effect on the wire.

package conform

import (
	"net/netip"

	"github.com/rnic/rnic/transport"
)

var _ transport.GroupMember = (*FaultLink)(nil)

// JoinGroup implements transport.GroupMember.
func (l *FaultLink) JoinGroup(group netip.Addr) error {
	if m, ok := l.inner.(transport.GroupMember); ok {
		return m.JoinGroup(group)
	}
	return nil // a point-to-point wire brings every frame anyway
}

// LeaveGroup implements transport.GroupMember; while the link stays in
// its groups (StayInGroups) the leave is not passed on.
func (l *FaultLink) LeaveGroup(group netip.Addr) error {
	m, ok := l.inner.(transport.GroupMember)
	if !ok || l.stay.Load() {
		return nil
	}
	return m.LeaveGroup(group)
}

// LoopsGroups implements transport.GroupMember.
func (l *FaultLink) LoopsGroups() bool {
	m, ok := l.inner.(transport.GroupMember)
	return ok && m.LoopsGroups()
}

// StayInGroups makes the link ignore the engine's leaves (true) or pass
// them on again (false).
func (l *FaultLink) StayInGroups(stay bool) { l.stay.Store(stay) }
