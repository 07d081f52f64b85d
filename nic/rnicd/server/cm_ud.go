// UD rdma_cm ids (ibv.UDConnManager) through the daemon: a UD listener is
// a listener handle whose requests are SIDR_REQs; accepting one answers
// with the client's UD QP (no state change, no connection); a resolve
// returns the peer's QPN, Q_Key and address vector.

package server

import (
	"context"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/proto"
)

func init() {
	Register(proto.OpCMListenUD, handleCMListenUD)
	Register(proto.OpCMResolveUD, handleCMResolveUD)
}

// udConnManagerOf returns the session's device's CM for UD ids.
func udConnManagerOf(s *Session) (ibv.UDConnManager, error) {
	return deviceAs[ibv.UDConnManager](s, "rnicd: %s offers no UD rdma_cm ids")
}

func handleCMListenUD(s *Session, req *Request, rep *Reply) error {
	var m proto.CMListenReq
	if err := req.Decode(&m); err != nil {
		return err
	}
	cm, err := udConnManagerOf(s)
	if err != nil {
		return err
	}
	return extOf(s).addListener(rep, func() (*cmListener, uint16, error) {
		return s.listenFree(proto.PortSpaceUDP, m.Port, func(port uint16) (*cmListener, uint16, error) {
			l, err := cm.CMListenUD(port)
			if err != nil {
				return nil, 0, err
			}
			return &cmListener{ud: l}, l.Port(), nil
		})
	})
}

// getUDRequest is CM_GET_REQUEST on a UD listener.
func (x *sessionExt) getUDRequest(rep *Reply, token uint32, l ibv.CMUDListener) error {
	return x.startAsync(rep, token, proto.OpCMResult, func(ctx context.Context) (proto.Message, func(), error) {
		r, err := l.Accept(ctx)
		if err != nil {
			return nil, nil, err
		}
		x.mu.Lock()
		defer x.mu.Unlock()
		if err := x.reserveCMID(); err != nil {
			r.Reject(nil)
			return nil, nil, err
		}
		h := x.newHandle()
		x.cmRequests[h] = &cmRequest{ud: r}
		return &proto.CMRequestInfo{Request: h, PrivateData: r.PrivateData(), Local: r.LocalAddr(), Remote: r.RemoteAddr()}, nil, nil
	})
}

// acceptUD is CM_ACCEPT on a UD request: the SIDR_REP names q; the
// result is Empty.
func (x *sessionExt) acceptUD(rep *Reply, token uint32, r ibv.CMUDRequest, q *qpObj, pd []byte) error {
	err := x.startAsync(rep, token, proto.OpCMResult, func(ctx context.Context) (proto.Message, func(), error) {
		if err := r.Accept(q.qp, pd); err != nil {
			return nil, nil, err
		}
		return &proto.Empty{}, nil, nil
	})
	if err != nil {
		r.Reject(nil)
	}
	return err
}

func handleCMResolveUD(s *Session, req *Request, rep *Reply) error {
	var m proto.CMResolveUDReq
	if err := req.Decode(&m); err != nil {
		return err
	}
	cm, err := udConnManagerOf(s)
	if err != nil {
		return err
	}
	x := extOf(s)
	pd := append([]byte(nil), m.PrivateData...) // the body's buffer serves the next request
	rep.Set(&proto.Empty{})
	return x.startAsync(rep, m.Token, proto.OpCMResult, func(ctx context.Context) (proto.Message, func(), error) {
		s.tenant.cmPorts.awaitListen(ctx, proto.PortSpaceUDP, m.Addr, m.Port)
		p, err := cm.CMResolveUD(ctx, m.Addr, m.Port, pd)
		if err != nil {
			return rejectInfo(err), nil, err
		}
		return &proto.CMUDPeerInfo{QPN: p.QPN, QKey: p.QKey, PrivateData: p.PrivateData, Local: p.Local,
			Remote: p.Remote, AV: p.AV}, nil, nil
	})
}
