// rdma_cm through the daemon (ibv.ConnManager): the daemon's CM connects
// the client's QPs (by handle) and moves them to RTS; CM_DISCONNECTED
// closes a connection's Done. The daemon going away closes every Done too.

package client

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/proto"
)

func init() { registerEvent(proto.OpCMDisconnected, deliverDisconnected) }

// connManager is a Device's ibv.ConnManager.
type connManager struct{ d *Device }

var _ ibv.ConnManager = connManager{}

// undoTimeout bounds the disconnect that undoes a connection whose caller
// gave up (its context ended as the connection came up).
const undoTimeout = 5 * time.Second

func (m connManager) CMListen(port uint16) (ibv.CMListener, error) {
	var rep proto.CMListenReply
	if _, err := m.d.call(proto.OpCMListen, &proto.CMListenReq{Port: port}, nil, &rep); err != nil {
		return nil, err
	}
	return &cmListener{d: m.d, h: rep.Listener, port: rep.Port}, nil
}

// qp returns qp as a QP of this device.
func (d *Device) qp(qp ibv.QP) (*QP, error) {
	q, ok := qp.(*QP)
	if !ok || q.d != d {
		return nil, ibv.ErrForeign
	}
	return q, nil
}

func connParam(p *ibv.ConnParam) ibv.ConnParam {
	if p == nil {
		return ibv.ConnParam{}
	}
	return *p
}

func (m connManager) CMConnect(ctx context.Context, qp ibv.QP, addr netip.Addr, port uint16, privateData []byte, p *ibv.ConnParam) (ibv.CMConn, error) {
	q, err := m.d.qp(qp)
	if err != nil {
		return nil, err
	}
	return m.d.establish(ctx, proto.OpCMConnect, q, func(tok uint32) proto.Message {
		return &proto.CMConnectReq{Token: tok, QP: q.h, Addr: addr, Port: port, PrivateData: privateData, Param: connParam(p)}
	})
}

// establish runs a CM_CONNECT or CM_ACCEPT.
func (d *Device) establish(ctx context.Context, op proto.Op, q *QP, req func(uint32) proto.Message) (ibv.CMConn, error) {
	p, fds, err := d.startAsync(op, req)
	if err != nil {
		return nil, err
	}
	closeFDs(fds)
	var info proto.CMConnInfo
	err, ctxErr := p.wait(ctx, proto.OpCMCancel, &info)
	if err != nil {
		return nil, err
	}
	c := d.newCMConn(&info, q)
	if ctxErr != nil {
		dctx, cancel := context.WithTimeout(context.Background(), undoTimeout)
		defer cancel()
		c.Disconnect(dctx)
		return nil, ctxErr
	}
	return c, nil
}

// cmListener is a listening rdma_cm ID of the daemon's CM.
type cmListener struct {
	d    *Device
	h    uint32
	port uint16
}

func (l *cmListener) Port() uint16 { return l.port }

func (l *cmListener) Accept(ctx context.Context) (ibv.CMRequest, error) {
	p, fds, err := l.d.startAsync(proto.OpCMGetRequest, func(tok uint32) proto.Message {
		return &proto.CMGetRequestReq{Token: tok, Listener: l.h}
	})
	if err != nil {
		return nil, err
	}
	closeFDs(fds)
	info := proto.CMRequestInfo{}
	err, ctxErr := p.wait(ctx, proto.OpCMCancel, &info)
	if err != nil {
		return nil, err
	}
	r := &cmRequest{d: l.d, h: info.Request, pd: info.PrivateData, local: info.Local, remote: info.Remote, param: info.Param}
	if ctxErr != nil {
		r.Reject(nil)
		return nil, ctxErr
	}
	return r, nil
}

func (l *cmListener) Close() error {
	_, err := l.d.call(proto.OpCMCloseListener, &proto.Handle{H: l.h}, nil, &proto.Empty{})
	return err
}

// cmRequest is a connection request the daemon's CM holds for the client.
type cmRequest struct {
	d             *Device
	h             uint32
	pd            []byte
	local, remote netip.AddrPort
	param         ibv.ConnParam
}

func (r *cmRequest) PrivateData() []byte        { return r.pd }
func (r *cmRequest) Param() ibv.ConnParam       { return r.param }
func (r *cmRequest) LocalAddr() netip.AddrPort  { return r.local }
func (r *cmRequest) RemoteAddr() netip.AddrPort { return r.remote }

func (r *cmRequest) Reject(privateData []byte) error {
	_, err := r.d.call(proto.OpCMReject, &proto.CMRejectReq{Request: r.h, PrivateData: privateData}, nil, &proto.Empty{})
	return err
}

func (r *cmRequest) Accept(ctx context.Context, qp ibv.QP, privateData []byte, p *ibv.ConnParam) (ibv.CMConn, error) {
	q, err := r.d.qp(qp)
	if err != nil {
		return nil, err
	}
	return r.d.establish(ctx, proto.OpCMAccept, q, func(tok uint32) proto.Message {
		return &proto.CMAcceptReq{Token: tok, Request: r.h, QP: q.h, PrivateData: privateData, Param: connParam(p)}
	})
}

// cmConn is an established connection of the daemon's CM.
type cmConn struct {
	d             *Device
	h             uint32
	qp            *QP
	pd            []byte
	local, remote netip.AddrPort
	remoteQPN     uint32
	done          chan struct{}
	once          sync.Once
}

// connKey names a connection among every device's.
type connKey struct {
	d *Device
	h uint32
}

var cmConns sync.Map // connKey → *cmConn

func (d *Device) newCMConn(info *proto.CMConnInfo, q *QP) *cmConn {
	c := &cmConn{d: d, h: info.Conn, qp: q, pd: info.PrivateData, local: info.Local, remote: info.Remote,
		remoteQPN: info.RemoteQPN, done: make(chan struct{})}
	cmConns.Store(connKey{d, c.h}, c)
	go func() {
		select {
		case <-d.gone:
			c.down()
		case <-c.done:
		}
	}()
	return c
}

// down closes Done, once.
func (c *cmConn) down() {
	c.once.Do(func() {
		cmConns.CompareAndDelete(connKey{c.d, c.h}, c)
		close(c.done)
	})
}

// deliverDisconnected closes the Done of the connection an event names.
func deliverDisconnected(d *Device, body []byte) {
	var m proto.Handle
	r := proto.NewReader(body)
	m.Decode(r)
	if r.Done() != nil {
		return
	}
	if c, ok := cmConns.Load(connKey{d, m.H}); ok {
		c.(*cmConn).down()
	}
}

func (c *cmConn) QP() ibv.QP                 { return c.qp }
func (c *cmConn) PrivateData() []byte        { return c.pd }
func (c *cmConn) LocalAddr() netip.AddrPort  { return c.local }
func (c *cmConn) RemoteAddr() netip.AddrPort { return c.remote }
func (c *cmConn) RemoteQPN() uint32          { return c.remoteQPN }
func (c *cmConn) Done() <-chan struct{}      { return c.done }

// Disconnect disconnects and waits for the peer's answer or ctx. On a
// connection already down it returns nil.
func (c *cmConn) Disconnect(ctx context.Context) error {
	select {
	case <-c.done:
		return nil
	default:
	}
	p, fds, err := c.d.startAsync(proto.OpCMDisconnect, func(tok uint32) proto.Message {
		return &proto.CMDisconnectReq{Token: tok, Conn: c.h}
	})
	if err == nil {
		closeFDs(fds)
		var ctxErr error
		if err, ctxErr = p.wait(ctx, proto.OpCMCancel, &proto.Empty{}); err == nil {
			err = ctxErr
		}
	}
	select {
	case <-c.done:
		return nil // down meanwhile: the peer went first, or the event came
	default:
	}
	if err != nil {
		return fmt.Errorf("rnicd: disconnect: %w", err)
	}
	c.down()
	return nil
}

// rejectedError is a rejected CM_CONNECT with the REJ the daemon reported
// (CMRejectInfo): still ibv.ErrRejected, and an ibv.RejectDetail.
type rejectedError struct {
	err  error
	info proto.CMRejectInfo
}

func (e *rejectedError) Error() string             { return e.err.Error() }
func (e *rejectedError) Unwrap() error             { return e.err }
func (e *rejectedError) RejectReason() uint16      { return e.info.Reason }
func (e *rejectedError) RejectPrivateData() []byte { return e.info.PrivateData }

// withRejectDetail adds a rejection's details, when the result has them.
func withRejectDetail(err error, m *proto.AsyncResult) error {
	if m.Status != proto.StatusRejected || len(m.Body) == 0 {
		return err
	}
	e := &rejectedError{err: err}
	if m.DecodeResult(&e.info) != nil {
		return err
	}
	return e
}
