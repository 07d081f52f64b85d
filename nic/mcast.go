// Multicast attachments (ibv_attach_mcast, ibv_detach_mcast, IBTA §10.5):
// the verbs rules and limits, checked here for every engine, and the
// device's table of which QPs are attached to which group.
//
// As the kernel and rxe apply them: only UD QPs attach, the GID must be a
// multicast one (EINVAL otherwise), the LID is ignored on a RoCE port
// (RoCE Annex A16/A17), attaching a QP twice to a group succeeds and
// changes nothing, detaching a QP that is not attached is EINVAL, and the
// limits (groups, QPs per group, attachments in all) give ENOMEM. A QP
// that is destroyed leaves its groups.

package nic

import (
	"fmt"
	"net/netip"
	"sync"

	"github.com/rnic/rnic/nic/verbs"
)

// The multicast limits, rxe's (rxe_param.h): 8192 groups, 56 QPs in one,
// and 0x70000 attachments in all (which 8192 × 56 reaches exactly).
const (
	MaxMcastGrp           = 8192
	MaxMcastQPAttach      = 56
	MaxTotalMcastQPAttach = 0x70000
)

// mcastTable is the device's groups and the QPs attached to each.
type mcastTable struct {
	mu     sync.Mutex
	groups map[netip.Addr]map[uint32]struct{} // group GID → QPNs
	total  int                                // attachments over all groups
}

// mcastProvider returns the device's provider if its engine delivers
// multicast.
func (d *Device) mcastProvider() (verbs.McastProvider, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	p, ok := d.provider.(verbs.McastProvider)
	return p, ok
}

// mcastAttrs fills the multicast limits of a, if the engine has multicast.
func (d *Device) mcastAttrs(a *verbs.DeviceAttr) {
	if _, ok := d.mcastProvider(); ok {
		a.MaxMcastGrp, a.MaxMcastQPAttach, a.MaxTotalMcastQPAttach = MaxMcastGrp, MaxMcastQPAttach, MaxTotalMcastQPAttach
	}
}

// AttachMcast attaches q to the multicast group gid (ibv_attach_mcast);
// lid is ignored, as on every RoCE port.
func (q *QP) AttachMcast(gid netip.Addr, lid uint16) error {
	_ = lid
	p, err := q.checkMcast(gid, "attach")
	if err != nil {
		return err
	}
	gid = verbs.GIDFromAddr(gid)
	t := &q.d.mcast
	t.mu.Lock()
	defer t.mu.Unlock()
	members := t.groups[gid]
	if _, ok := members[q.qpn]; ok {
		return nil
	}
	switch {
	case members == nil && len(t.groups) >= MaxMcastGrp:
		return errorf(verbs.ErrNoMemory, "attach to %v: %d multicast groups, the device maximum", gid, MaxMcastGrp)
	case len(members) >= MaxMcastQPAttach:
		return errorf(verbs.ErrNoMemory, "attach to %v: %d QPs attached, the group maximum", gid, MaxMcastQPAttach)
	case t.total >= MaxTotalMcastQPAttach:
		return errorf(verbs.ErrNoMemory, "attach to %v: %d attachments, the device maximum", gid, MaxTotalMcastQPAttach)
	}
	if err := p.AttachMcast(gid, q.qpn); err != nil {
		return fmt.Errorf("nic: attach %v to %v: %w", q, gid, err)
	}
	if members == nil {
		if t.groups == nil {
			t.groups = make(map[netip.Addr]map[uint32]struct{})
		}
		members = make(map[uint32]struct{})
		t.groups[gid] = members
	}
	members[q.qpn] = struct{}{}
	t.total++
	return nil
}

// DetachMcast detaches q from the multicast group gid (ibv_detach_mcast).
func (q *QP) DetachMcast(gid netip.Addr, lid uint16) error {
	_ = lid
	p, err := q.checkMcast(gid, "detach")
	if err != nil {
		return err
	}
	gid = verbs.GIDFromAddr(gid)
	t := &q.d.mcast
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.groups[gid][q.qpn]; !ok {
		return errorf(verbs.ErrInvalid, "detach %v from %v: not attached", q, gid)
	}
	t.remove(p, gid, q.qpn)
	return nil
}

// checkMcast applies the rules both verbs share and returns the engine.
func (q *QP) checkMcast(gid netip.Addr, verb string) (verbs.McastProvider, error) {
	if q.destroyed.Load() {
		return nil, errorf(verbs.ErrDestroyed, "%s multicast: QP %#x", verb, q.qpn)
	}
	p, ok := q.d.mcastProvider()
	if !ok {
		return nil, errorf(verbs.ErrNotSupported, "%s multicast on %s", verb, q.d.name)
	}
	if q.typ != verbs.QPTypeUD {
		return nil, errorf(verbs.ErrInvalid, "%s multicast: %v is not UD", verb, q)
	}
	if !verbs.IsMulticastGID(gid) {
		return nil, errorf(verbs.ErrInvalid, "%s multicast: %v is not a multicast GID", verb, gid)
	}
	return p, nil
}

// remove takes qpn out of group, dropping the group when it empties.
// Caller holds t.mu.
func (t *mcastTable) remove(p verbs.McastProvider, group netip.Addr, qpn uint32) {
	members := t.groups[group]
	delete(members, qpn)
	t.total--
	if len(members) == 0 {
		delete(t.groups, group)
	}
	p.DetachMcast(group, qpn)
}

// detachAll takes a QP being destroyed out of every group it is in.
func (q *QP) detachAll() {
	p, ok := q.d.mcastProvider()
	if !ok {
		return
	}
	t := &q.d.mcast
	t.mu.Lock()
	defer t.mu.Unlock()
	for group, members := range t.groups {
		if _, ok := members[q.qpn]; ok {
			t.remove(p, group, q.qpn)
		}
	}
}

// McastGroups returns how many QPs of the device are attached to each
// group: what the device is a member of.
func (d *Device) McastGroups() map[netip.Addr]int {
	t := &d.mcast
	t.mu.Lock()
	defer t.mu.Unlock()
	m := make(map[netip.Addr]int, len(t.groups))
	for g, members := range t.groups {
		m[g] = len(members)
	}
	return m
}
