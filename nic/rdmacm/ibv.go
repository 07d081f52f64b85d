// rdma_cm behind the ibv interfaces: a CM as an ibv.ConnManager, and Local,
// which builds an in-process NIC's ibv.Device with its CM, so programs
// written against ibv connect the same way on every backend.

package rdmacm

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
)

// Local returns n as an ibv.Device that offers rdma_cm (ibv.ConnManager)
// on its QP1. Closing the device closes the CM, then n.
func Local(n *embedded.NIC, cfg Config) (ibv.Device, error) {
	return LocalWith(n, cfg, nic.IBVOptions{})
}

// LocalWith is Local with the device's other options: opt.Close, if set,
// closes the NIC in place of n.Close (a TAP-mode NIC closes its TAP too);
// opt.Counters defaults to the RoCEv2 engine's counters. The CM goes in
// opt.ConnManager, which must be nil.
func LocalWith(n *embedded.NIC, cfg Config, opt nic.IBVOptions) (ibv.Device, error) {
	if opt.ConnManager != nil {
		return nil, fmt.Errorf("rdmacm: local device: IBVOptions already has a ConnManager")
	}
	c, err := New(n, cfg)
	if err != nil {
		return nil, err
	}
	closeNIC := opt.Close
	if closeNIC == nil {
		closeNIC = n.Close
	}
	opt.Close = func() error {
		c.Close()
		return closeNIC()
	}
	opt.ConnManager = c.ConnManager()
	return n.Verbs(opt), nil
}

// ConnManager returns c as an ibv.ConnManager. It binds QPs of c's NIC
// given as its ibv QPs (nic.AsIBV of the NIC's *nic.Device): those in RESET,
// or in INIT with receives posted, as after rdma_create_qp. A connection's
// QP is the ibv.QP it was given.
func (c *CM) ConnManager() ibv.ConnManager { return ibvCM{c} }

type ibvCM struct{ c *CM }

// qp unwraps an ibv.QP of the CM's NIC.
func (a ibvCM) qp(qp ibv.QP) (*nic.QP, error) {
	q := nic.QPOf(qp)
	if q == nil || a.c.n.Device.QP(q.QPN()) != q {
		return nil, fmt.Errorf("rdmacm: %w", ibv.ErrForeign)
	}
	return q, nil
}

// param converts ibv's rdma_conn_param; nil stays nil (the defaults).
func param(p *ibv.ConnParam) *ConnParam {
	if p == nil {
		return nil
	}
	return &ConnParam{ResponderResources: p.ResponderResources, InitiatorDepth: p.InitiatorDepth,
		RetryCount: p.RetryCount, RNRRetryCount: p.RNRRetryCount, Access: p.Access, ACKTimeout: p.ACKTimeout}
}

func (a ibvCM) CMListen(port uint16) (ibv.CMListener, error) {
	l, err := a.c.Listen(port)
	if errors.Is(err, ErrInUse) {
		return nil, fmt.Errorf("%w: %w", verbs.ErrBusy, err) // ibv's contract: EADDRINUSE
	}
	if err != nil {
		return nil, err
	}
	return ibvListener{l, a}, nil
}

func (a ibvCM) CMConnect(ctx context.Context, qp ibv.QP, addr netip.Addr, port uint16, privateData []byte, p *ibv.ConnParam) (ibv.CMConn, error) {
	q, err := a.qp(qp)
	if err != nil {
		return nil, err
	}
	cn, err := a.c.Connect(ctx, q, addr, port, privateData, param(p))
	if err != nil {
		return nil, err
	}
	return ibvConn{cn, qp}, nil
}

// ibvListener, ibvRequest and ibvConn are the CM's own types with the
// methods that take or return a QP in ibv's terms.
type ibvListener struct {
	*Listener
	a ibvCM
}

func (l ibvListener) Accept(ctx context.Context) (ibv.CMRequest, error) {
	r, err := l.Listener.Accept(ctx)
	if err != nil {
		return nil, err
	}
	return ibvRequest{r, l.a}, nil
}

type ibvRequest struct {
	*Request
	a ibvCM
}

func (r ibvRequest) Accept(ctx context.Context, qp ibv.QP, privateData []byte, p *ibv.ConnParam) (ibv.CMConn, error) {
	q, err := r.a.qp(qp)
	if err != nil {
		return nil, err
	}
	cn, err := r.Request.Accept(ctx, q, privateData, param(p))
	if err != nil {
		return nil, err
	}
	return ibvConn{cn, qp}, nil
}

// PrepareAccept moves qp to RTS before Accept (ibv.CMAcceptPreparer).
func (r ibvRequest) PrepareAccept(qp ibv.QP, p *ibv.ConnParam) error {
	q, err := r.a.qp(qp)
	if err != nil {
		return err
	}
	return r.Request.PrepareAccept(q, param(p))
}

// Param is the REQ's parameters in ibv's terms.
func (r ibvRequest) Param() ibv.ConnParam {
	p := r.Request.Param()
	return ibv.ConnParam{ResponderResources: p.ResponderResources, InitiatorDepth: p.InitiatorDepth,
		RetryCount: p.RetryCount, RNRRetryCount: p.RNRRetryCount}
}

type ibvConn struct {
	*Conn
	qp ibv.QP
}

func (c ibvConn) QP() ibv.QP { return c.qp }

var (
	_ ibv.ConnManager      = ibvCM{}
	_ ibv.CMListener       = ibvListener{}
	_ ibv.CMRequest        = ibvRequest{}
	_ ibv.CMAcceptPreparer = ibvRequest{}
	_ ibv.CMConn           = ibvConn{}
)

// The UD ids in ibv's terms.

func (a ibvCM) CMListenUD(port uint16) (ibv.CMUDListener, error) {
	l, err := a.c.ListenUD(port)
	if err != nil {
		return nil, err
	}
	return ibvUDListener{l, a}, nil
}

func (a ibvCM) CMResolveUD(ctx context.Context, addr netip.Addr, port uint16, privateData []byte) (ibv.UDPeer, error) {
	p, err := a.c.ResolveUD(ctx, addr, port, privateData)
	if err != nil {
		return ibv.UDPeer{}, err
	}
	return ibv.UDPeer{QPN: p.QPN, QKey: p.QKey, AV: p.AV, PrivateData: p.PrivateData, Local: p.Local, Remote: p.Remote}, nil
}

type ibvUDListener struct {
	*UDListener
	a ibvCM
}

func (l ibvUDListener) Accept(ctx context.Context) (ibv.CMUDRequest, error) {
	r, err := l.UDListener.Accept(ctx)
	if err != nil {
		return nil, err
	}
	return ibvUDRequest{r, l.a}, nil
}

type ibvUDRequest struct {
	*UDRequest
	a ibvCM
}

func (r ibvUDRequest) Accept(qp ibv.QP, privateData []byte) error {
	q, err := r.a.qp(qp)
	if err != nil {
		return err
	}
	return r.UDRequest.Accept(q, privateData)
}

var (
	_ ibv.UDConnManager = ibvCM{}
	_ ibv.CMUDListener  = ibvUDListener{}
	_ ibv.CMUDRequest   = ibvUDRequest{}
)

// External QPs in ibv's terms.

// externalQP checks that qpn names an RC QP of the CM's NIC.
func (a ibvCM) externalQP(qpn uint32) error {
	q := a.c.n.Device.QP(qpn)
	if q == nil || q.Type() != verbs.QPTypeRC {
		return fmt.Errorf("rdmacm: QP %d: no RC QP of this device: %w", qpn, ibv.ErrForeign)
	}
	return nil
}

func (a ibvCM) CMConnectExternal(ctx context.Context, qpn uint32, addr netip.Addr, port uint16, privateData []byte, p *ibv.ConnParam) (ibv.CMResponse, error) {
	if err := a.externalQP(qpn); err != nil {
		return nil, err
	}
	r, err := a.c.ConnectExternal(ctx, qpn, addr, port, privateData, param(p))
	if err != nil {
		return nil, err
	}
	return ibvResponse{r}, nil
}

type ibvResponse struct{ *Response }

func (r ibvResponse) Establish() (ibv.CMConn, error) {
	cn, err := r.Response.Establish()
	if err != nil {
		return nil, err
	}
	return ibvConn{cn, nil}, nil
}

func (r ibvRequest) QPAttrs() ibv.ExternalQPAttrs {
	a, _ := r.Request.QPAttrs() // an address the REQ came to: AcceptExternal fails if gone
	return a
}

func (r ibvRequest) AcceptExternal(ctx context.Context, qpn uint32, privateData []byte, p *ibv.ConnParam) (ibv.CMConn, error) {
	if err := r.a.externalQP(qpn); err != nil {
		r.Request.Reject(nil)
		return nil, err
	}
	cn, err := r.Request.AcceptExternal(ctx, qpn, privateData, param(p))
	if err != nil {
		return nil, err
	}
	return ibvConn{cn, nil}, nil
}

var (
	_ ibv.ExternalConnManager = ibvCM{}
	_ ibv.CMResponse          = ibvResponse{}
	_ ibv.ExternalCMRequest   = ibvRequest{}
)
