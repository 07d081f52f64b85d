// attach_mcast and detach_mcast: a UD QP joins or leaves a multicast
// group (ibv_attach_mcast, ibv_detach_mcast), LID 0 as on every RoCE
// port. The QP remembers its groups so that destroying it detaches first.

package agent

import (
	"errors"
	"fmt"
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
	if !slices.Contains(o.groups, gid) {
		o.groups = append(o.groups, gid)
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
