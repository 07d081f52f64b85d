// attach_mcast and detach_mcast: a UD QP joins or leaves a multicast
// group (ibv_attach_mcast, ibv_detach_mcast), LID 0 as on every RoCE
// port. The QP remembers its groups so that destroying it detaches first,
// and holds the kernel's IP membership of each where it needs one
// (ipjoin.go).

package agent

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"

	"github.com/rnic/rnic/cmd/internal/conform/agentproto"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
)

func (s *session) opAttachMcast(req agentproto.Request) (any, error) {
	o, m, gid, err := s.mcastArgs(req)
	if err != nil {
		return nil, err
	}
	if err := m.AttachMcast(gid, 0); err != nil {
		if errors.Is(err, verbs.ErrNotSupported) {
			return nil, fail(agentproto.CodeUnsupported, err)
		}
		return nil, err
	}
	if slices.Contains(o.groups, gid) {
		return nil, nil
	}
	o.groups = append(o.groups, gid)
	if _, ok := o.joins[gid]; ok {
		return nil, nil // joined before an earlier detach
	}
	join, err := joinIP(s.dev, gid)
	if err != nil {
		_ = m.DetachMcast(gid, 0) // the attach fails as a whole
		o.groups = o.groups[:len(o.groups)-1]
		return nil, err
	}
	if join != nil {
		if o.joins == nil {
			o.joins = map[netip.Addr]*net.UDPConn{}
		}
		o.joins[gid] = join
	}
	return nil, nil
}

func (s *session) opDetachMcast(req agentproto.Request) (any, error) {
	o, m, gid, err := s.mcastArgs(req)
	if err != nil {
		return nil, err
	}
	if err := m.DetachMcast(gid, 0); err != nil {
		return nil, err
	}
	// The kernel's IP membership stays until the QP goes: a datagram to
	// the group after the detach must be dropped by the device's own
	// check, not by the host's IP stack in front of it.
	o.groups = slices.DeleteFunc(o.groups, func(g netip.Addr) bool { return g == gid })
	return nil, nil
}

// mcastArgs decodes a request's QP and group: the QP must be able to
// attach (unsupported otherwise), the group is returned as a 16-byte GID.
func (s *session) mcastArgs(req agentproto.Request) (*qpObj, ibv.McastQP, netip.Addr, error) {
	var a agentproto.Mcast
	if err := args(req, &a); err != nil {
		return nil, nil, netip.Addr{}, err
	}
	o, err := get[*qpObj](s, a.QP, "QP")
	if err != nil {
		return nil, nil, netip.Addr{}, err
	}
	m, ok := o.qp.(ibv.McastQP)
	if !ok {
		return nil, nil, netip.Addr{}, fail(agentproto.CodeUnsupported, fmt.Errorf("%s: QPs without multicast", s.dev.Name()))
	}
	g, err := netip.ParseAddr(a.GID)
	if err != nil {
		return nil, nil, netip.Addr{}, fail(agentproto.CodeBadRequest, fmt.Errorf("gid: %w", err))
	}
	return o, m, netip.AddrFrom16(g.As16()), nil
}

// leaveIP drops the kernel's IP memberships the QP holds.
func (o *qpObj) leaveIP() {
	for g, c := range o.joins {
		c.Close()
		delete(o.joins, g)
	}
}
