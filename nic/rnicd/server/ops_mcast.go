// ATTACH_MCAST, DETACH_MCAST (proto/mcast.go): the NIC's model checks the
// rules; the session remembers each QP's groups, so that destroying a QP
// still attached fails with EBUSY, as the kernel's uverbs refuses it,
// while reaping detaches whatever a dead client left.

package server

import (
	"fmt"
	"net/netip"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/verbs"
)

func init() {
	Register(proto.OpAttachMcast, handleAttachMcast)
	Register(proto.OpDetachMcast, handleDetachMcast)
}

// mcastQP decodes a request and finds its QP's multicast interface.
func mcastQP(s *Session, req *Request) (*qpObj, ibv.McastQP, *proto.McastReq, error) {
	var m proto.McastReq
	if err := req.Decode(&m); err != nil {
		return nil, nil, nil, err
	}
	o, err := lookup[*qpObj](s, m.QP, kindQP)
	if err != nil {
		return nil, nil, nil, err
	}
	mq, ok := o.qp.(ibv.McastQP)
	if !ok {
		return nil, nil, nil, fmt.Errorf("rnicd: multicast on %s: %w", s.dev.dev.Name(), verbs.ErrNotSupported)
	}
	return o, mq, &m, nil
}

func handleAttachMcast(s *Session, req *Request, rep *Reply) error {
	o, mq, m, err := mcastQP(s, req)
	if err != nil {
		return err
	}
	if err := mq.AttachMcast(m.Group(), m.LID); err != nil {
		return err
	}
	if o.groups == nil {
		o.groups = make(map[netip.Addr]struct{})
	}
	o.groups[m.Group()] = struct{}{}
	rep.Set(&proto.Empty{})
	return nil
}

func handleDetachMcast(s *Session, req *Request, rep *Reply) error {
	o, mq, m, err := mcastQP(s, req)
	if err != nil {
		return err
	}
	if err := mq.DetachMcast(m.Group(), m.LID); err != nil {
		return err
	}
	delete(o.groups, m.Group())
	rep.Set(&proto.Empty{})
	return nil
}
