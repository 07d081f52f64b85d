// Multicast attachments through the daemon (ATTACH_MCAST, DETACH_MCAST):
// ibv.McastQP on a daemon's QP. A device without multicast (max_mcast_grp
// 0) refuses them with verbs.ErrNotSupported.

package client

import (
	"net/netip"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/verbs"
)

var _ ibv.McastQP = (*QP)(nil)

// AttachMcast implements ibv.McastQP.
func (q *QP) AttachMcast(gid netip.Addr, lid uint16) error {
	return q.mcast(proto.OpAttachMcast, gid, lid)
}

// DetachMcast implements ibv.McastQP.
func (q *QP) DetachMcast(gid netip.Addr, lid uint16) error {
	return q.mcast(proto.OpDetachMcast, gid, lid)
}

func (q *QP) mcast(op proto.Op, gid netip.Addr, lid uint16) error {
	req := proto.McastReq{QP: q.h, GID: verbs.GIDFromAddr(gid).As16(), LID: lid}
	_, err := q.d.call(op, &req, nil, &proto.Empty{})
	return err
}
