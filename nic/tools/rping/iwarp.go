// The iWARP Connector: the iWARP engine's connection manager (TCP, then
// the MPA Request/Reply of RFC 5044 / RFC 6581) in the role Linux iw_cm
// plays under rdma_cm. What goes on the wire is what rping over siw sends
// (captures/siw-rping.pcap): MPA revision 2 with the enhanced flag, IRD 1
// and ORD 1 as the only private data, no peer-to-peer RTR offered (siw's
// peer_to_peer is off) and, unless asked, no CRC (siw's mpa_crc_required is
// off; a peer that asks gets CRCs anyway). A disconnect is TCP's FIN, as
// siw closes an RTS QP.

package rping

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"sync"
	"time"

	"github.com/rnic/rnic/iwarp"
	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/transport"
	"github.com/rnic/rnic/transport/clock"
	"github.com/rnic/rnic/transport/stream"
)

// IWARPConfig describes an iWARP Connector.
type IWARPConfig struct {
	// Name is the verbs device's name (rnic0 if empty).
	Name string
	// Network carries the connections: &stream.TCP{} (kernel TCP, the
	// embedded mode) or a TAP-mode NIC's own TCP (tapnic.NIC.Streams).
	Network stream.Network
	// Addr is the local address connections are made from (the zero Addr
	// lets the network choose); it is also the device's GID.
	Addr netip.Addr
	// CRC asks peers for MPA CRCs (C=1).
	CRC bool
	// MSS sizes the FPDUs (iwarp.DefaultMSS if 0).
	MSS int
	// Pcap, if set, records every connection as Ethernet/IP/TCP frames
	// (the embedded mode's capture; a TAP records its own frames).
	Pcap *transport.PcapWriter
	// Trace, if set, receives the engine's connection and QP trace.
	Trace io.Writer
	// Settle is how long Connect waits after the MPA Reply before it
	// returns, so the first SEND does not follow the Reply at once
	// (DefaultSettle if 0, none if negative). Linux siw, on the passive
	// side, finishes moving its QP to RTS after it has sent the Reply; an
	// FPDU that arrives in between can sit in its socket unprocessed until
	// more data comes, and rping's server then waits forever for the
	// client's first SEND (seen in the lab under load, about one run in
	// five; a Linux rping client, slower, sends ~6 ms after the Reply, and
	// perftest waits a second).
	Settle time.Duration
}

// DefaultSettle is IWARPConfig.Settle's default.
const DefaultSettle = 100 * time.Millisecond

// IWARP is a Connector on the iWARP engine.
type IWARP struct {
	stack  *iwarp.Stack
	dev    *nic.Device
	ibv    ibv.Device    // dev, as the sessions use it
	settle time.Duration // see IWARPConfig.Settle

	mu    sync.Mutex
	conns map[uint32]*iwConn // by QPN
}

var _ Connector = (*IWARP)(nil)

// NewIWARP opens an iWARP device and its connection manager.
func NewIWARP(cfg IWARPConfig) (*IWARP, error) {
	if cfg.Network == nil {
		cfg.Network = &stream.TCP{}
	}
	c := &IWARP{conns: map[uint32]*iwConn{}, settle: cfg.Settle}
	switch {
	case c.settle == 0:
		c.settle = DefaultSettle
	case c.settle < 0:
		c.settle = 0
	}
	scfg := iwarp.Config{
		Clock: clock.NewReal(), Network: cfg.Network, Addr: cfg.Addr, MSS: cfg.MSS,
		NoCRC: !cfg.CRC,
		// siw as initiator offers no RTR; as responder iw_cm takes
		// whatever the engine accepts.
		RTR:         iwarp.RTRNone,
		OnConnEvent: c.event,
	}
	if cfg.Pcap != nil {
		pw := cfg.Pcap
		scfg.Tee = func(s stream.Conn) stream.Conn {
			return stream.TeeConnWith(s, pw, stream.TeeConfig{Now: time.Now, Framer: iwarp.CaptureFramer})
		}
	}
	if cfg.Trace != nil {
		w := cfg.Trace
		scfg.Trace = func(e iwarp.TraceEvent) { fmt.Fprintln(w, e) }
	}
	var err error
	if c.stack, err = iwarp.NewStack(scfg); err != nil {
		return nil, fmt.Errorf("rping: %w", err)
	}
	var gids []netip.Addr
	if cfg.Addr.IsValid() && !cfg.Addr.IsUnspecified() {
		gids = []netip.Addr{cfg.Addr}
	}
	if c.dev, err = nic.Open(nic.Config{Name: cfg.Name, GIDs: gids, Provider: c.stack}); err != nil {
		c.stack.Close()
		return nil, fmt.Errorf("rping: %w", err)
	}
	c.ibv = ibv.Local(c.dev, ibv.LocalOptions{Close: c.Close})
	return c, nil
}

// Device implements Connector: the iWARP device, in-process (its QPs
// connect through this Connector only).
func (c *IWARP) Device() ibv.Device { return c.ibv }

// Close closes the connection manager and the device.
func (c *IWARP) Close() error {
	c.stack.Close()
	return c.dev.Close()
}

// event routes the engine's connection events to their connections.
func (c *IWARP) event(e iwarp.ConnEvent) {
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

// track starts routing qp's events to a new connection.
func (c *IWARP) track(qp ibv.QP) *iwConn {
	cn := &iwConn{c: c, qpn: qp.QPN(), established: make(chan struct{}), done: make(chan struct{})}
	c.mu.Lock()
	c.conns[cn.qpn] = cn
	c.mu.Unlock()
	return cn
}

func (c *IWARP) untrack(cn *iwConn) {
	c.mu.Lock()
	if c.conns[cn.qpn] == cn {
		delete(c.conns, cn.qpn)
	}
	c.mu.Unlock()
}

// Connect implements Connector.
func (c *IWARP) Connect(ctx context.Context, qp ibv.QP, remote netip.AddrPort, p ConnParam) (Conn, error) {
	cn := c.track(qp)
	res := make(chan iwarp.ConnectResult, 1)
	if err := c.stack.Connect(qp.QPN(), remote, p.PrivateData, p.ResponderResources, p.InitiatorDepth,
		func(r iwarp.ConnectResult) { res <- r }); err != nil {
		c.untrack(cn)
		return nil, fmt.Errorf("rping: connect: %w", err)
	}
	select {
	case r := <-res:
		if r.Err != nil {
			c.untrack(cn)
			return nil, &ConnectError{Remote: remote, Err: r.Err}
		}
		cn.local, cn.remote = r.Local, r.Remote
		if d := c.settle; d > 0 {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
				c.stack.Disconnect(qp.QPN())
				c.untrack(cn)
				return nil, ctx.Err()
			}
		}
		return cn, nil
	case <-ctx.Done():
		c.stack.Disconnect(qp.QPN())
		c.untrack(cn)
		return nil, ctx.Err()
	}
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

// Listen implements Connector.
func (c *IWARP) Listen(addr netip.AddrPort) (Listener, error) {
	l := &iwListener{c: c, reqs: make(chan *iwarp.ConnRequest, 3)} // rdma_listen(id, 3)
	var err error
	l.l, err = c.stack.Listen(addr, func(r *iwarp.ConnRequest) {
		select {
		case l.reqs <- r:
		default:
			r.Reject(nil) // the backlog is full
		}
	})
	if err != nil {
		return nil, fmt.Errorf("rping: %w", err)
	}
	return l, nil
}

type iwListener struct {
	c    *IWARP
	l    *iwarp.Listener
	reqs chan *iwarp.ConnRequest
}

func (l *iwListener) Addr() netip.AddrPort { return l.l.Addr() }
func (l *iwListener) Close() error         { return l.l.Close() }

func (l *iwListener) Accept(ctx context.Context) (Request, error) {
	select {
	case r := <-l.reqs:
		return &iwRequest{c: l.c, r: r}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type iwRequest struct {
	c *IWARP
	r *iwarp.ConnRequest
}

func (r *iwRequest) Remote() netip.AddrPort { return r.r.Remote }
func (r *iwRequest) Reject() error          { return r.r.Reject(nil) }

func (r *iwRequest) Accept(ctx context.Context, qp ibv.QP, p ConnParam) (Conn, error) {
	cn := r.c.track(qp)
	cn.local, cn.remote = r.r.Local, r.r.Remote
	if err := r.r.Accept(qp.QPN(), p.PrivateData, p.ResponderResources, p.InitiatorDepth); err != nil {
		r.c.untrack(cn)
		return nil, fmt.Errorf("rping: accept: %w", err)
	}
	// Established at once without an RTR, else when the RTR arrives.
	select {
	case <-cn.established:
		return cn, nil
	case <-cn.done:
		return nil, fmt.Errorf("rping: connection from %v ended before it was established: %w", cn.remote, cn.Err())
	case <-ctx.Done():
		r.c.stack.Disconnect(qp.QPN())
		return nil, ctx.Err()
	}
}

// iwConn is one connection of a QP.
type iwConn struct {
	c             *IWARP
	qpn           uint32
	local, remote netip.AddrPort
	established   chan struct{}
	estOnce       sync.Once

	done    chan struct{}
	endOnce sync.Once
	err     error
}

func (cn *iwConn) Local() netip.AddrPort  { return cn.local }
func (cn *iwConn) Remote() netip.AddrPort { return cn.remote }
func (cn *iwConn) Done() <-chan struct{}  { return cn.done }

func (cn *iwConn) Err() error {
	select {
	case <-cn.done:
		return cn.err
	default:
		return nil
	}
}

func (cn *iwConn) end(err error) {
	cn.endOnce.Do(func() {
		if errors.Is(err, io.EOF) {
			err = nil // the peer's orderly close
		}
		cn.err = err
		close(cn.done)
		cn.c.untrack(cn)
	})
}

func (cn *iwConn) Disconnect() error {
	err := cn.c.stack.Disconnect(cn.qpn)
	if errors.Is(err, iwarp.ErrNotConnected) {
		return nil // already over: the peer closed first
	}
	return err
}
