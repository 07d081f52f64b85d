// The Connector: a verbs device's rdma_cm (ibv.ConnManager), whatever its
// transport. Over RoCEv2 that is nic/rdmacm (or rnicd's or libibverbs'
// rdma_cm): the IB CM's
// REQ/REP/RTU and DREQ/DREP MADs on QP1 with rdma_cm's header and TCP port
// space service ID, in the role the kernel's rdma_cm and ib_cm play under
// rping on rxe. What goes on the wire is what rping over rxe sends
// (testdata/captures/rxe-rping.pcap):
//
//	client                                   server
//	REQ  (QP1, service 0x0000000001061C06) ─▶
//	                                       ◀─ REP
//	RTU                                    ─▶ both RC QPs in RTS
//	... 10 rounds of SEND / READ / SEND / SEND / WRITE / SEND, each ACKed
//	DREQ                                   ─▶ (the client ends it)
//	                                       ◀─ DREP
//
// The QPs are RC QPs of any ibv.Device that offers rdma_cm
// (ibv.ConnManager): the in-process NIC's own RoCEv2 engine with
// nic/rdmacm (a NIC on a kernel UDP socket in the embedded mode, the
// TAP-mode NIC's in the TAP mode), or a device opened by its string (rnicd,
// libibverbs), whose rdma_cm does the same. Over iWARP it is the iWARP
// NIC's own CM (iwarp.go).

package rping

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/rnic/rnic/cmd/internal/progkit"
	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rdmacm"
)

// CM is a Connector on a device's rdma_cm.
type CM struct {
	d   ibv.Device
	cm  ibv.ConnManager
	rcm *rdmacm.CM // the CM NewRoCE attached, or nil
	// reqs is how many times the CM sends a REQ nothing answers (RoCEv2).
	reqs int
	// closeDev, if set, is what Close closes (a device NewIWARP opened).
	closeDev func() error
}

// rdmaCMRetries is rdma_cm's CMA_MAX_CM_RETRIES, which rnic's rdmacm
// takes when its Config says 0.
const rdmaCMRetries = 15

var _ Connector = (*CM)(nil)

// NewRoCE attaches rdma_cm to the QP1 of n, a RoCEv2 NIC the caller owns
// (embedded.Open, or a tapnic.NIC's NIC); Close detaches it and leaves
// the NIC open.
func NewRoCE(n *embedded.NIC, cfg rdmacm.Config) (*CM, error) {
	c, err := rdmacm.New(n, cfg)
	if err != nil {
		return nil, fmt.Errorf("rping: %w", err)
	}
	// The device is the NIC's to close; Close here only detaches the CM.
	d := nic.AsIBV(n.Device, nic.IBVOptions{ConnManager: c.ConnManager(), Close: c.Close})
	retries := int(cfg.MaxRetries)
	if retries == 0 {
		retries = rdmaCMRetries
	}
	return &CM{d: d, cm: c.ConnManager(), rcm: c, reqs: 1 + retries}, nil
}

// NewCM is the Connector on d, which must offer rdma_cm
// (ibv.ConnManager); Close leaves d open.
func NewCM(d ibv.Device) (*CM, error) {
	cm, ok := d.(ibv.ConnManager)
	if !ok {
		return nil, fmt.Errorf("rping: device %s offers no rdma_cm", d.Name())
	}
	return &CM{d: d, cm: cm, reqs: 1 + rdmaCMRetries}, nil
}

// Device implements Connector.
func (c *CM) Device() ibv.Device { return c.d }

// CM returns the connection manager NewRoCE attached (its counters), or
// nil.
func (c *CM) CM() *rdmacm.CM { return c.rcm }

// Close detaches the connection manager NewRoCE attached from QP1 (not
// the NIC), closes the NIC NewIWARP opened, and for a device of NewCM
// does nothing.
func (c *CM) Close() error {
	switch {
	case c.rcm != nil:
		return c.rcm.Close()
	case c.closeDev != nil:
		return c.closeDev()
	}
	return nil
}

// disconnectWait bounds Disconnect's wait for the DREP. A live peer
// answers at once; a lost DREQ is sent again after rdma_cm's response
// timeout (about 6.4 s), so this leaves room for one retry. The CM's
// retries go on for longer (16 tries, about 100 s) before they end the
// connection as disconnected; rping does not wait for that. A variable
// only so that the tests need not wait 15 s.
var disconnectWait = 15 * time.Second

// access is what rdma_cm allows a connected RC QP: what rping's
// rdma_create_qp asks for, remote READ and WRITE.
const access = memory.LocalWrite | memory.RemoteWrite | memory.RemoteRead

func cmParam(p ConnParam) *ibv.ConnParam {
	return &ibv.ConnParam{
		ResponderResources: uint8(min(p.ResponderResources, 255)),
		InitiatorDepth:     uint8(min(p.InitiatorDepth, 255)),
		Access:             access,
	}
}

// Connect implements Connector.
func (c *CM) Connect(ctx context.Context, qp ibv.QP, remote netip.AddrPort, p ConnParam) (Conn, error) {
	cn, err := c.cm.CMConnect(ctx, qp, remote.Addr(), remote.Port(), p.PrivateData, cmParam(p))
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		if errors.Is(err, rdmacm.ErrTimeout) {
			// rping's RDMA_CM_EVENT_UNREACHABLE (ETIMEDOUT), in words.
			err = fmt.Errorf("no answer to the connection request (rdma_cm sent its REQ %d times): %w", c.reqs, err)
		}
		return nil, &ConnectError{Remote: remote, Err: err}
	}
	return cmConn{cn}, nil
}

// ConnectError is a failed connection attempt: refused, rejected, timed
// out (rping's RDMA_CM_EVENT_REJECTED / CONNECT_ERROR / UNREACHABLE).
type ConnectError struct {
	Remote netip.AddrPort
	Err    error
}

func (e *ConnectError) Error() string {
	return fmt.Sprintf("rping: connect to %v: %v", e.Remote, e.Err)
}

func (e *ConnectError) Unwrap() error { return e.Err }

// Listen implements Connector. rdma_cm listens on every address of the
// device; a listener on one address refuses REQs sent to another. Port 0
// lets rdma_cm pick a free port.
func (c *CM) Listen(addr netip.AddrPort) (Listener, error) {
	a := addr.Addr().Unmap()
	if a.IsValid() && !a.IsUnspecified() && !progkit.HasAddr(c.d.GIDs(), a) {
		return nil, fmt.Errorf("rping: %v is not an address of %s", a, c.d.Name())
	}
	l, err := c.cm.CMListen(addr.Port())
	if err != nil {
		return nil, fmt.Errorf("rping: %w", err)
	}
	return &cmListener{l: l, addr: netip.AddrPortFrom(a, l.Port())}, nil
}

type cmListener struct {
	l    ibv.CMListener
	addr netip.AddrPort
}

func (l *cmListener) Addr() netip.AddrPort { return l.addr }
func (l *cmListener) Close() error         { return l.l.Close() }

func (l *cmListener) Accept(ctx context.Context) (Request, error) {
	for {
		r, err := l.l.Accept(ctx)
		if err != nil {
			return nil, err
		}
		if a := l.addr.Addr(); a.IsValid() && !a.IsUnspecified() && r.LocalAddr().Addr().Unmap() != a {
			// Bound to another of the device's addresses: the kernel's
			// rdma_cm finds no listener and the REQ is refused.
			r.Reject(nil)
			continue
		}
		return cmRequest{r}, nil
	}
}

type cmRequest struct{ r ibv.CMRequest }

func (r cmRequest) Remote() netip.AddrPort { return r.r.RemoteAddr() }
func (r cmRequest) Reject() error          { return r.r.Reject(nil) }

func (r cmRequest) Accept(ctx context.Context, qp ibv.QP, p ConnParam) (Conn, error) {
	cn, err := r.r.Accept(ctx, qp, p.PrivateData, cmParam(p))
	if err != nil {
		return nil, fmt.Errorf("rping: accept: %w", err)
	}
	return cmConn{cn}, nil
}

// cmConn is an rdma_cm connection.
type cmConn struct{ c ibv.CMConn }

func (cn cmConn) Local() netip.AddrPort  { return cn.c.LocalAddr() }
func (cn cmConn) Remote() netip.AddrPort { return cn.c.RemoteAddr() }
func (cn cmConn) Done() <-chan struct{}  { return cn.c.Done() }

// Disconnect ends the connection (RoCEv2: the DREQ; iWARP: TCP's FIN)
// and waits, boundedly, for the peer's answer (the DREP; its FIN), as
// rdma_disconnect and the DISCONNECTED event that follows. An answer that
// does not come within the bound is no error: rdma_disconnect itself never
// waits for it, and a peer that has gone (its DREP lost, its process
// exited, its CM with it) never answers the DREQ's retries, which the CM
// goes on sending until they end the connection as disconnected (as
// ib_cm's DREQ timeout: rdma_cm's DISCONNECTED with ETIMEDOUT).
func (cn cmConn) Disconnect() error {
	ctx, cancel := context.WithTimeout(context.Background(), disconnectWait)
	defer cancel()
	err := cn.c.Disconnect(ctx)
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil
	}
	return err
}
