// rdma_cm with an external QP (proto/cm_external.go): the client's own
// RC QP, named by its QP number, connected through the device's CM
// (ibv.ExternalConnManager) without the CM moving it. On the active side
// the REP ends CM_CONNECT_EXT and leaves a pending connection (a cmConn
// whose conn is nil, its resp set) that CM_ESTABLISH completes; closing
// the session rejects it.

package server

import (
	"bytes"
	"context"
	"fmt"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/verbs"
)

func init() {
	Register(proto.OpCMConnectExt, handleCMConnectExt)
	Register(proto.OpCMAcceptExt, handleCMAcceptExt)
	Register(proto.OpCMEstablish, handleCMEstablish)
	Register(proto.OpCMInitQPAttr, handleCMQPAttr)
}

// qpByNumber returns the session's QP numbered qpn: an external QP must
// be the client's own.
func qpByNumber(s *Session, qpn uint32) (*qpObj, error) {
	for _, o := range s.objectsOf(kindQP) {
		if q, ok := o.(*qpObj); ok && q.qp.QPN() == qpn {
			return q, nil
		}
	}
	return nil, fmt.Errorf("%w: no QP numbered %d", proto.ErrBadHandle, qpn)
}

// externalCMOf returns the session's device's CM if it connects external
// QPs.
func externalCMOf(s *Session) (ibv.ExternalConnManager, error) {
	return deviceAs[ibv.ExternalConnManager](s, "rnicd: %s's rdma_cm takes no external QP")
}

func handleCMConnectExt(s *Session, req *Request, rep *Reply) error {
	var m proto.CMConnectReq
	if err := req.Decode(&m); err != nil {
		return err
	}
	cm, err := externalCMOf(s)
	if err != nil {
		return err
	}
	q, err := qpByNumber(s, m.QP)
	if err != nil {
		return err
	}
	x := extOf(s)
	pd := bytes.Clone(m.PrivateData)
	param := m.Param
	rep.Set(&proto.Empty{})
	return x.startAsync(rep, m.Token, proto.OpCMResult, func(ctx context.Context) (proto.Message, func(), error) {
		s.tenant.cmPorts.awaitListen(ctx, proto.PortSpaceTCP, m.Addr, m.Port)
		r, err := cm.CMConnectExternal(ctx, m.QP, m.Addr, m.Port, pd, &param)
		if err != nil {
			return rejectInfo(err), nil, err
		}
		return x.addResponse(r, q)
	})
}

// addResponse files a REP awaiting CM_ESTABLISH as a pending connection.
func (x *sessionExt) addResponse(r ibv.CMResponse, q *qpObj) (proto.Message, func(), error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.reserveCMID(); err != nil {
		r.Abort()
		return nil, nil, err
	}
	c := &cmConn{h: x.newHandle(), resp: r, qp: q}
	x.cmConns[c.h] = c
	return &proto.CMConnInfo{Conn: c.h, PrivateData: r.PrivateData(), Local: r.LocalAddr(), Remote: r.RemoteAddr(),
		RemoteQPN: r.RemoteQPN()}, nil, nil
}

func handleCMEstablish(s *Session, req *Request, rep *Reply) error {
	var m proto.Handle
	if err := req.Decode(&m); err != nil {
		return err
	}
	x := extOf(s)
	x.mu.Lock()
	c, ok := x.cmConns[m.H]
	x.mu.Unlock()
	if !ok || c.resp == nil {
		return fmt.Errorf("%w: CM connection %d awaiting establish", proto.ErrBadHandle, m.H)
	}
	cn, err := c.resp.Establish()
	if err != nil {
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return errSessionGone // close aborted the pending connection
	}
	c.conn, c.resp = cn, nil
	x.wg.Add(1)
	go x.watch(c)
	rep.Set(&proto.Empty{})
	return nil
}

func handleCMAcceptExt(s *Session, req *Request, rep *Reply) error {
	var m proto.CMAcceptReq
	if err := req.Decode(&m); err != nil {
		return err
	}
	x := extOf(s)
	q, err := qpByNumber(s, m.QP)
	if err != nil {
		return err
	}
	r, err := x.takeRequest(m.Request)
	if err != nil {
		return err
	}
	er, ok := r.req.(ibv.ExternalCMRequest)
	if r.ud != nil || !ok {
		r.reject(nil)
		return fmt.Errorf("rnicd: request %d takes no external QP: %w", m.Request, verbs.ErrNotSupported)
	}
	pd := bytes.Clone(m.PrivateData)
	param := m.Param
	rep.Set(&proto.Empty{})
	err = x.startAsync(rep, m.Token, proto.OpCMResult, func(ctx context.Context) (proto.Message, func(), error) {
		cn, err := er.AcceptExternal(ctx, m.QP, pd, &param)
		if err != nil {
			return nil, nil, err
		}
		return x.addConn(cn, q)
	})
	if err != nil {
		r.req.Reject(nil)
	}
	return err
}

// handleCMQPAttr gives the attributes of a pending connection's or an
// unanswered request's external QP.
func handleCMQPAttr(s *Session, req *Request, rep *Reply) error {
	var m proto.Handle
	if err := req.Decode(&m); err != nil {
		return err
	}
	x := extOf(s)
	x.mu.Lock()
	c := x.cmConns[m.H]
	r := x.cmRequests[m.H]
	x.mu.Unlock()
	switch {
	case c != nil && c.resp != nil:
		rep.Set(&proto.CMQPAttr{A: c.resp.QPAttrs()})
	case r != nil && r.req != nil:
		er, ok := r.req.(ibv.ExternalCMRequest)
		if !ok {
			return fmt.Errorf("rnicd: request %d takes no external QP: %w", m.H, verbs.ErrNotSupported)
		}
		rep.Set(&proto.CMQPAttr{A: er.QPAttrs()})
	default:
		return fmt.Errorf("%w: CM request or pending connection %d", proto.ErrBadHandle, m.H)
	}
	return nil
}
