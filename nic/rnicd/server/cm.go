// rdma_cm (ibv.ConnManager) through the daemon: the served device's CM,
// one for all its clients, binding the client's QPs by handle. Requests a
// listener queued, connections and their disconnects are the client's
// handles; a connection going down reaches the client as CM_DISCONNECTED.
// A client that goes closes its listeners, rejects its unanswered
// requests and disconnects its connections, so peers see a DREQ (their
// Done closes) rather than a dead host.

package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/verbs"
)

func init() {
	Register(proto.OpCMQuery, handleCMQuery)
	Register(proto.OpCMListen, handleCMListen)
	Register(proto.OpCMCloseListener, handleCMCloseListener)
	Register(proto.OpCMGetRequest, handleCMGetRequest)
	Register(proto.OpCMReject, handleCMReject)
	Register(proto.OpCMAccept, handleCMAccept)
	Register(proto.OpCMConnect, handleCMConnect)
	Register(proto.OpCMDisconnect, handleCMDisconnect)
	Register(proto.OpCMCancel, handleCMCancel)
}

// cmListener and cmRequest are a connected (RDMA_PS_TCP) id's, or with
// ud set a UD id's (cm_ud.go).
type cmListener struct {
	l  ibv.CMListener
	ud ibv.CMUDListener
}

type cmRequest struct {
	req ibv.CMRequest
	ud  ibv.CMUDRequest
}

func (l *cmListener) close() error {
	if l.ud != nil {
		return l.ud.Close()
	}
	return l.l.Close()
}

func (r *cmRequest) reject(privateData []byte) error {
	if r.ud != nil {
		return r.ud.Reject(privateData)
	}
	return r.req.Reject(privateData)
}

type cmConn struct {
	h    uint32
	conn ibv.CMConn
	qp   *qpObj
	// resp, with conn nil, is an external QP's REP awaiting CM_ESTABLISH
	// (cm_external.go).
	resp ibv.CMResponse
}

// abort disconnects without waiting for the peer: the DREQ goes, the CM
// retries it on its own. A pending connection's REP is rejected.
func (c *cmConn) abort() {
	if c.conn == nil {
		c.resp.Abort()
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c.conn.Disconnect(ctx)
	c.qp.publishState()
}

// connManagerOf returns the session's device's CM.
func connManagerOf(s *Session) (ibv.ConnManager, error) {
	return deviceAs[ibv.ConnManager](s, "rnicd: %s offers no rdma_cm")
}

// deviceAs returns the session's device as T, one of ibv's optional
// interfaces, or ErrNotSupported with lacks (naming the device by %s).
func deviceAs[T any](s *Session, lacks string) (T, error) {
	t, ok := s.dev.dev.(T)
	if !ok {
		return t, fmt.Errorf(lacks+": %w", s.dev.dev.Name(), verbs.ErrNotSupported)
	}
	return t, nil
}

// publishState publishes the QP's state in its rings (the CM moves it
// without the client asking), unless the QP is destroyed: destroy disowns
// it, under the device's lock, before it unmaps the rings.
func (q *qpObj) publishState() {
	d := q.s.dev
	d.mu.Lock()
	defer d.mu.Unlock()
	if t, ok := d.owners[q.qp]; ok && t == eventTarget(q) {
		q.rings.State.Store(uint32(q.qp.State()))
	}
}

// bindQP returns the session's QP h for the CM, with the receives the
// client posted so far handed to the NIC: the CM moves the QP on from
// INIT, and a message may arrive at once.
func bindQP(s *Session, h uint32) (*qpObj, error) {
	q, err := lookup[*qpObj](s, h, kindQP)
	if err != nil {
		return nil, err
	}
	q.d.mu.Lock()
	q.d.drain()
	q.d.mu.Unlock()
	return q, nil
}

// reserveCMID counts one CM ID against the client's limit. Caller holds
// x.mu.
func (x *sessionExt) reserveCMID() error {
	if x.closed {
		return errSessionGone
	}
	if lim := x.s.srv.limits.MaxCMIDs; x.cmIDs >= lim {
		return limitError(lim, "rdma_cm IDs", "MaxCMIDs")
	}
	x.cmIDs++
	return nil
}

// addConn registers an established connection and returns its result and
// the watcher to start once the result is sent.
func (x *sessionExt) addConn(cn ibv.CMConn, q *qpObj) (proto.Message, func(), error) {
	q.publishState()
	x.mu.Lock()
	if err := x.reserveCMID(); err != nil {
		x.mu.Unlock()
		c := &cmConn{conn: cn, qp: q}
		c.abort()
		return nil, nil, err
	}
	c := &cmConn{h: x.newHandle(), conn: cn, qp: q}
	x.cmConns[c.h] = c
	x.wg.Add(1)
	x.mu.Unlock()
	info := &proto.CMConnInfo{Conn: c.h, PrivateData: cn.PrivateData(), Local: cn.LocalAddr(), Remote: cn.RemoteAddr(),
		RemoteQPN: cn.RemoteQPN()}
	return info, func() { go x.watch(c) }, nil
}

// watch tells the client when c goes down.
func (x *sessionExt) watch(c *cmConn) {
	defer x.wg.Done()
	select {
	case <-c.conn.Done():
	case <-x.ctx.Done():
		return // close disconnects it
	}
	c.qp.publishState()
	x.mu.Lock()
	if _, ok := x.cmConns[c.h]; ok {
		delete(x.cmConns, c.h)
		x.cmIDs--
	}
	x.mu.Unlock()
	x.s.sendNow(proto.OpCMDisconnected, &proto.Handle{H: c.h})
}

func handleCMQuery(s *Session, req *Request, rep *Reply) error {
	if err := req.Decode(&proto.Empty{}); err != nil {
		return err
	}
	_, ok := s.dev.dev.(ibv.ConnManager)
	rep.Set(&proto.Available{Available: ok})
	return nil
}

func handleCMListen(s *Session, req *Request, rep *Reply) error {
	var m proto.CMListenReq
	if err := req.Decode(&m); err != nil {
		return err
	}
	cm, err := connManagerOf(s)
	if err != nil {
		return err
	}
	return extOf(s).addListener(rep, func() (*cmListener, uint16, error) {
		return s.listenFree(proto.PortSpaceTCP, m.Port, func(port uint16) (*cmListener, uint16, error) {
			l, err := cm.CMListen(port)
			if err != nil {
				return nil, 0, err
			}
			return &cmListener{l: l}, l.Port(), nil
		})
	})
}

// addListener reserves a CM id, opens a listener (RC or UD) with open and
// files it under a new handle; a session that closed meanwhile closes it
// again and gives the id back.
func (x *sessionExt) addListener(rep *Reply, open func() (*cmListener, uint16, error)) error {
	x.mu.Lock()
	err := x.reserveCMID()
	x.mu.Unlock()
	if err != nil {
		return err
	}
	l, port, err := open()
	x.mu.Lock()
	defer x.mu.Unlock()
	if err == nil && x.closed {
		l.close()
		err = errSessionGone
	}
	if err != nil {
		x.cmIDs--
		return err
	}
	h := x.newHandle()
	x.cmListeners[h] = l
	rep.Set(&proto.CMListenReply{Listener: h, Port: port})
	return nil
}

func handleCMCloseListener(s *Session, req *Request, rep *Reply) error {
	var m proto.Handle
	if err := req.Decode(&m); err != nil {
		return err
	}
	x := extOf(s)
	x.mu.Lock()
	l, ok := x.cmListeners[m.H]
	if ok {
		delete(x.cmListeners, m.H)
		x.cmIDs--
	}
	x.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: CM listener %d", proto.ErrBadHandle, m.H)
	}
	rep.Set(&proto.Empty{})
	return l.close()
}

func handleCMGetRequest(s *Session, req *Request, rep *Reply) error {
	var m proto.CMGetRequestReq
	if err := req.Decode(&m); err != nil {
		return err
	}
	x := extOf(s)
	x.mu.Lock()
	l, ok := x.cmListeners[m.Listener]
	x.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: CM listener %d", proto.ErrBadHandle, m.Listener)
	}
	rep.Set(&proto.Empty{})
	if l.ud != nil {
		return x.getUDRequest(rep, m.Token, l.ud)
	}
	return x.startAsync(rep, m.Token, proto.OpCMResult, func(ctx context.Context) (proto.Message, func(), error) {
		r, err := l.l.Accept(ctx)
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
		x.cmRequests[h] = &cmRequest{req: r}
		return &proto.CMRequestInfo{Request: h, PrivateData: r.PrivateData(), Local: r.LocalAddr(), Remote: r.RemoteAddr(),
			Param: r.Param()}, nil, nil
	})
}

// takeRequest removes the session's request h: whoever takes it answers
// it, once.
func (x *sessionExt) takeRequest(h uint32) (*cmRequest, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	r, ok := x.cmRequests[h]
	if !ok {
		return nil, fmt.Errorf("%w: CM request %d (answered already?)", proto.ErrBadHandle, h)
	}
	delete(x.cmRequests, h)
	x.cmIDs--
	return r, nil
}

func handleCMReject(s *Session, req *Request, rep *Reply) error {
	var m proto.CMRejectReq
	if err := req.Decode(&m); err != nil {
		return err
	}
	r, err := extOf(s).takeRequest(m.Request)
	if err != nil {
		return err
	}
	rep.Set(&proto.Empty{})
	return r.reject(m.PrivateData)
}

func handleCMAccept(s *Session, req *Request, rep *Reply) error {
	var m proto.CMAcceptReq
	if err := req.Decode(&m); err != nil {
		return err
	}
	x := extOf(s)
	q, err := bindQP(s, m.QP)
	if err != nil {
		return err
	}
	r, err := x.takeRequest(m.Request)
	if err != nil {
		return err
	}
	pd := bytes.Clone(m.PrivateData) // the body's buffer serves the next request
	param := m.Param
	if r.ud != nil {
		rep.Set(&proto.Empty{})
		return x.acceptUD(rep, m.Token, r.ud, q, pd)
	}
	// the QP in RTS before the reply, as rdma_accept leaves it
	if pr, ok := r.req.(ibv.CMAcceptPreparer); ok {
		err := pr.PrepareAccept(q.qp, &param)
		q.publishState()
		if err != nil {
			return err
		}
	}
	rep.Set(&proto.Empty{})
	err = x.startAsync(rep, m.Token, proto.OpCMResult, func(ctx context.Context) (proto.Message, func(), error) {
		cn, err := r.req.Accept(ctx, q.qp, pd, &param)
		if err != nil {
			q.publishState()
			return nil, nil, err
		}
		return x.addConn(cn, q)
	})
	if err != nil {
		r.req.Reject(nil)
	}
	return err
}

func handleCMConnect(s *Session, req *Request, rep *Reply) error {
	var m proto.CMConnectReq
	if err := req.Decode(&m); err != nil {
		return err
	}
	cm, err := connManagerOf(s)
	if err != nil {
		return err
	}
	x := extOf(s)
	q, err := bindQP(s, m.QP)
	if err != nil {
		return err
	}
	pd := bytes.Clone(m.PrivateData)
	param := m.Param
	rep.Set(&proto.Empty{})
	return x.startAsync(rep, m.Token, proto.OpCMResult, func(ctx context.Context) (proto.Message, func(), error) {
		s.tenant.cmPorts.awaitListen(ctx, proto.PortSpaceTCP, m.Addr, m.Port)
		cn, err := cm.CMConnect(ctx, q.qp, m.Addr, m.Port, pd, &param)
		if err != nil {
			q.publishState()
			return rejectInfo(err), nil, err
		}
		return x.addConn(cn, q)
	})
}

// rejectInfo is the body of a rejected CM_CONNECT's result: the REJ's
// reason and private data, when the CM reports them; nil otherwise.
func rejectInfo(err error) proto.Message {
	var d ibv.RejectDetail
	if !errors.As(err, &d) {
		return nil
	}
	pd := d.RejectPrivateData()
	if len(pd) > proto.MaxRejectPrivateData {
		pd = pd[:proto.MaxRejectPrivateData]
	}
	return &proto.CMRejectInfo{Reason: d.RejectReason(), PrivateData: pd}
}

func handleCMDisconnect(s *Session, req *Request, rep *Reply) error {
	var m proto.CMDisconnectReq
	if err := req.Decode(&m); err != nil {
		return err
	}
	x := extOf(s)
	x.mu.Lock()
	c, ok := x.cmConns[m.Conn]
	if ok && c.conn == nil { // an external QP's, never established
		ok = false
	}
	x.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: CM connection %d (down already?)", proto.ErrBadHandle, m.Conn)
	}
	rep.Set(&proto.Empty{})
	return x.startAsync(rep, m.Token, proto.OpCMResult, func(ctx context.Context) (proto.Message, func(), error) {
		err := c.conn.Disconnect(ctx)
		c.qp.publishState()
		return nil, nil, err
	})
}

func handleCMCancel(s *Session, req *Request, rep *Reply) error {
	var m proto.Token
	if err := req.Decode(&m); err != nil {
		return err
	}
	extOf(s).cancelAsync(m.Token)
	rep.Set(&proto.Empty{})
	return nil
}
