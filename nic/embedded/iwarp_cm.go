// The iWARP NIC's rdma_cm in ibv's terms, the role Linux iw_cm plays under
// rdma_cm: a listener is a TCP listener whose MPA Requests wait for
// Accept or Reject; a connect is TCP, then the MPA Request/Reply (RFC 5044
// §7.1, RFC 6581 for IRD/ORD and the RTR); a disconnect closes the stream.
// The engine moves the QPs (INIT → RTS, and to ERR when the stream ends);
// this file brings a RESET QP to INIT, as rdma_create_qp does, and routes
// the engine's connection events to the connections.

package embedded

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"sync"
	"time"

	"github.com/rnic/rnic/iwarp"
	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/transport/stream"
)

// iwarpCM is an iWARP NIC's ibv.ConnManager.
type iwarpCM struct {
	n *IWARPNIC

	mu    sync.Mutex
	conns map[uint32]*iwarpConn // by QPN, from connect or accept to the end
}

var (
	_ ibv.ConnManager = (*iwarpCM)(nil)
	_ ibv.CMListener  = (*iwarpListener)(nil)
	_ ibv.CMRequest   = (*iwarpRequest)(nil)
	_ ibv.CMConn      = (*iwarpConn)(nil)
)

func newIWARPCM(n *IWARPNIC) *iwarpCM {
	return &iwarpCM{n: n, conns: make(map[uint32]*iwarpConn)}
}

// iwarpParam is an ibv.ConnParam with rdma_cm's defaults filled in, as
// iWARP uses it: IRD and ORD go in the MPA frames; retry counts have no
// meaning over TCP.
type iwarpParam struct {
	ird, ord uint16
	access   memory.Access
}

func iwarpParamOf(p *ibv.ConnParam) iwarpParam {
	q := iwarpParam{ird: 1, ord: 1, access: memory.LocalWrite | memory.RemoteWrite | memory.RemoteRead | memory.RemoteAtomic}
	if p == nil {
		return q
	}
	if p.ResponderResources != 0 || p.ExactIRDORD {
		q.ird = uint16(p.ResponderResources)
	}
	if p.InitiatorDepth != 0 || p.ExactIRDORD {
		q.ord = uint16(p.InitiatorDepth)
	}
	if p.Access != 0 {
		q.access = p.Access
	}
	return q
}

// ready unwraps an ibv.QP of this NIC and brings it to INIT: an RC QP in
// RESET (moved to INIT with access), or already in INIT.
func (c *iwarpCM) ready(qp ibv.QP, access memory.Access) (*nic.QP, error) {
	q := nic.QPOf(qp)
	if q == nil || c.n.Device.QP(q.QPN()) != q {
		return nil, fmt.Errorf("embedded: iWARP CM: %w", ibv.ErrForeign)
	}
	if q.Type() != verbs.QPTypeRC {
		return nil, fmt.Errorf("embedded: iWARP CM: %v QP %#x: only RC QPs connect", q.Type(), q.QPN())
	}
	if q.State() != verbs.QPSReset {
		return q, nil // the engine refuses any state but INIT
	}
	if err := q.Modify(&verbs.QPAttr{State: verbs.QPSInit, PortNum: 1, AccessFlags: access},
		verbs.AttrState|verbs.AttrPKeyIndex|verbs.AttrPort|verbs.AttrAccessFlags); err != nil {
		return nil, fmt.Errorf("embedded: iWARP CM: QP %#x to INIT: %w", q.QPN(), err)
	}
	return q, nil
}

// track starts routing qp's connection events to a new connection.
func (c *iwarpCM) track(qp ibv.QP) *iwarpConn {
	cn := &iwarpConn{c: c, qp: qp, qpn: qp.QPN(), established: make(chan struct{}), done: make(chan struct{})}
	c.mu.Lock()
	c.conns[cn.qpn] = cn
	c.mu.Unlock()
	return cn
}

func (c *iwarpCM) untrack(cn *iwarpConn) {
	c.mu.Lock()
	if c.conns[cn.qpn] == cn {
		delete(c.conns, cn.qpn)
	}
	c.mu.Unlock()
}

// event is the engine's OnConnEvent.
func (c *iwarpCM) event(e iwarp.ConnEvent) {
	c.mu.Lock()
	cn := c.conns[e.QPN]
	c.mu.Unlock()
	if cn == nil {
		return
	}
	switch e.Type {
	case iwarp.EventEstablished:
		cn.estOnce.Do(func() { close(cn.established) })
	case iwarp.EventDisconnected:
		cn.end(e.Err)
	}
}

// CMConnect implements ibv.ConnManager: TCP to addr:port, the MPA Request
// with privateData and our IRD/ORD, and the Reply.
func (c *iwarpCM) CMConnect(ctx context.Context, qp ibv.QP, addr netip.Addr, port uint16, privateData []byte, p *ibv.ConnParam) (ibv.CMConn, error) {
	cp := iwarpParamOf(p)
	q, err := c.ready(qp, cp.access)
	if err != nil {
		return nil, err
	}
	remote := netip.AddrPortFrom(addr.Unmap(), port)
	cn := c.track(qp)
	res := make(chan iwarp.ConnectResult, 1)
	if err := c.n.Stack.Connect(q.QPN(), remote, privateData, cp.ird, cp.ord,
		func(r iwarp.ConnectResult) { res <- r }); err != nil {
		c.untrack(cn)
		return nil, fmt.Errorf("embedded: iWARP connect to %v: %w", remote, err)
	}
	select {
	case r := <-res:
		if r.Err != nil {
			c.untrack(cn)
			return nil, connectError(remote, r)
		}
		cn.local, cn.remote, cn.privateData, cn.mpa = r.Local, r.Remote, r.PrivateData, resultMPA(r)
		if err := c.settle(ctx); err != nil {
			c.n.Stack.Disconnect(q.QPN())
			c.untrack(cn)
			return nil, err
		}
		return cn, nil
	case <-ctx.Done():
		c.n.Stack.Disconnect(q.QPN()) // abandons the attempt
		c.untrack(cn)
		return nil, ctx.Err()
	}
}

// settle waits the NIC's Settle after an MPA Reply (IWARPConfig.Settle),
// or until ctx ends.
func (c *iwarpCM) settle(ctx context.Context) error {
	if c.n.settle <= 0 {
		return nil
	}
	t := time.NewTimer(c.n.settle)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// CMListen implements ibv.ConnManager: a TCP listener on the NIC's
// address.
func (c *iwarpCM) CMListen(port uint16) (ibv.CMListener, error) {
	l := &iwarpListener{c: c, reqs: make(chan *iwarp.ConnRequest, listenBacklog)}
	var err error
	l.l, err = c.n.Stack.Listen(netip.AddrPortFrom(c.n.Addr, port), l.request)
	if errors.Is(err, stream.ErrAddrInUse) {
		// ibv's contract: EADDRINUSE, not an internal error.
		return nil, fmt.Errorf("embedded: %w: %w", verbs.ErrBusy, err)
	}
	if err != nil {
		return nil, fmt.Errorf("embedded: %w", err)
	}
	return l, nil
}

// listenBacklog is how many requests wait for Accept before the next is
// rejected (Linux rdma_listen's default backlog, and the largest rdma_cm
// programs ask for in practice).
const listenBacklog = 64

type iwarpListener struct {
	c    *iwarpCM
	l    *iwarp.Listener
	reqs chan *iwarp.ConnRequest

	mu     sync.Mutex
	closed bool
}

// request queues an MPA Request for Accept; the engine calls it and it
// must not block.
func (l *iwarpListener) request(r *iwarp.ConnRequest) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		r.Reject(nil)
		return
	}
	select {
	case l.reqs <- r:
	default:
		r.Reject(nil) // the backlog is full
	}
}

func (l *iwarpListener) Port() uint16 { return l.l.Addr().Port() }

func (l *iwarpListener) Accept(ctx context.Context) (ibv.CMRequest, error) {
	select {
	case r := <-l.reqs:
		return &iwarpRequest{c: l.c, r: r}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close stops listening and rejects the requests nobody accepted.
func (l *iwarpListener) Close() error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	err := l.l.Close()
	for {
		select {
		case r := <-l.reqs:
			r.Reject(nil)
		default:
			return err
		}
	}
}

type iwarpRequest struct {
	c *iwarpCM
	r *iwarp.ConnRequest
}

func (r *iwarpRequest) PrivateData() []byte        { return r.r.PrivateData }
func (r *iwarpRequest) LocalAddr() netip.AddrPort  { return r.r.Local }
func (r *iwarpRequest) RemoteAddr() netip.AddrPort { return r.r.Remote }

// Param is the MPA Request's IRD and ORD from this side: the peer's ORD
// is our responder resources, its IRD our initiator depth (as siw reports
// them through iw_cm).
func (r *iwarpRequest) Param() ibv.ConnParam {
	return ibv.ConnParam{ResponderResources: uint8(min(r.r.ORD, 255)), InitiatorDepth: uint8(min(r.r.IRD, 255))}
}

// Reject answers with an MPA Reply carrying R and privateData.
func (r *iwarpRequest) Reject(privateData []byte) error {
	if err := r.r.Reject(privateData); err != nil {
		return fmt.Errorf("embedded: iWARP reject: %w", err)
	}
	return nil
}

// Accept binds qp and sends the MPA Reply; the connection is established
// at once without an RTR, else when the initiator's RTR arrives.
func (r *iwarpRequest) Accept(ctx context.Context, qp ibv.QP, privateData []byte, p *ibv.ConnParam) (ibv.CMConn, error) {
	cp := iwarpParamOf(p)
	q, err := r.c.ready(qp, cp.access)
	if err != nil {
		return nil, err
	}
	cn := r.c.track(qp)
	cn.local, cn.remote, cn.privateData, cn.mpa = r.r.Local, r.r.Remote, r.r.PrivateData, requestMPA(r.r)
	if err := r.r.Accept(q.QPN(), privateData, cp.ird, cp.ord); err != nil {
		r.c.untrack(cn)
		return nil, fmt.Errorf("embedded: iWARP accept: %w", err)
	}
	select {
	case <-cn.established:
		return cn, nil
	case <-cn.done:
		return nil, fmt.Errorf("embedded: iWARP connection from %v ended before it was established: %w", cn.remote, cn.endErr())
	case <-ctx.Done():
		r.c.n.Stack.Disconnect(q.QPN())
		return nil, ctx.Err()
	}
}

// iwarpConn is one connection of a QP.
type iwarpConn struct {
	c                 *iwarpCM
	qp                ibv.QP
	qpn               uint32
	local, remote     netip.AddrPort
	privateData       []byte
	mpa               MPAParams // the peer's MPA frame (see MPA)
	established, done chan struct{}
	estOnce, endOnce  sync.Once
	err               error // why it ended, once done is closed
}

func (cn *iwarpConn) QP() ibv.QP                 { return cn.qp }
func (cn *iwarpConn) PrivateData() []byte        { return cn.privateData }
func (cn *iwarpConn) LocalAddr() netip.AddrPort  { return cn.local }
func (cn *iwarpConn) RemoteAddr() netip.AddrPort { return cn.remote }
func (cn *iwarpConn) Done() <-chan struct{}      { return cn.done }

// RemoteQPN is 0: MPA carries no QP numbers (rdma_cm reports 0 too).
func (cn *iwarpConn) RemoteQPN() uint32 { return 0 }

// end closes done; err is nil for an orderly close by either side.
func (cn *iwarpConn) end(err error) {
	cn.endOnce.Do(func() {
		if errors.Is(err, io.EOF) {
			err = nil
		}
		cn.err = err
		close(cn.done)
		cn.c.untrack(cn)
	})
}

func (cn *iwarpConn) endErr() error {
	<-cn.done
	return cn.err
}

// Disconnect closes our side of the stream (the QP goes to ERR, its WRs
// flushed) and waits for the peer's close or ctx. A connection already
// down (the peer closed, or its QP was destroyed) is nothing to do, as on
// RoCE.
func (cn *iwarpConn) Disconnect(ctx context.Context) error {
	select {
	case <-cn.done:
		return nil
	default:
	}
	err := cn.c.n.Stack.Disconnect(cn.qpn)
	if err != nil && !errors.Is(err, iwarp.ErrNotConnected) { // not connected: the peer went first
		return fmt.Errorf("embedded: iWARP disconnect: %w", err)
	}
	select {
	case <-cn.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
