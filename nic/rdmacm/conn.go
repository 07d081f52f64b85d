package rdmacm

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync"

	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce/cm"
)

// Conn is an established connection: an RC QP in RTS and the CM ID that
// connected it.
type Conn struct {
	qp             *nic.QP
	id             *cm.ID
	local, remote  netip.AddrPort
	privateData    []byte
	ev             events
	done           chan struct{}
	once           sync.Once
	disconnectOnce sync.Once
}

func newConn(qp *nic.QP) *Conn {
	return &Conn{qp: qp, ev: make(events, 8), done: make(chan struct{})}
}

// handle is the ID's handler once a Conn exists: a disconnect (the peer's
// DREQ, or the answer to ours) puts the QP in ERR, as rdma_cm does, and
// closes Done.
func (c *Conn) handle(ev cm.Event) error {
	if ev.Type == cm.EventDisconnected {
		c.down()
	}
	return c.ev.handler(ev)
}

func (c *Conn) down() {
	c.once.Do(func() {
		c.toErr()
		close(c.done)
	})
}

// toErr moves the QP to ERR, unless it is an external QP, which the
// program moves itself (rdma_cm never touches a QP it was not given).
func (c *Conn) toErr() {
	if c.qp != nil {
		c.qp.Modify(&verbs.QPAttr{State: verbs.QPSErr}, verbs.AttrState)
	}
}

// QP returns the connected QP (nil for an external QP).
func (c *Conn) QP() *nic.QP { return c.qp }

// PrivateData returns what the peer sent with the connection: the REP's
// private data (196 bytes, zero padded) on the active side, the consumer
// bytes after the rdma_cm header of the REQ (56 bytes) on the passive side.
func (c *Conn) PrivateData() []byte { return c.privateData }

// LocalAddr and RemoteAddr are the connection's IP addresses and rdma_cm
// ports.
func (c *Conn) LocalAddr() netip.AddrPort  { return c.local }
func (c *Conn) RemoteAddr() netip.AddrPort { return c.remote }

// RemoteQPN is the peer's QP number.
func (c *Conn) RemoteQPN() uint32 { return c.id.RemoteQPN() }

// Done is closed when the connection is down (either side disconnected).
func (c *Conn) Done() <-chan struct{} { return c.done }

// Disconnect moves the QP to ERR, sends a DREQ and waits for the DREP (or
// the CM's retries to run out, or ctx). Calling it on a connection the
// peer already disconnected returns nil.
func (c *Conn) Disconnect(ctx context.Context) error {
	select {
	case <-c.done:
		return nil
	default:
	}
	var err error
	c.disconnectOnce.Do(func() {
		c.toErr()
		if e := c.id.Disconnect(nil); e != nil {
			select {
			case <-c.done: // the peer's DREQ crossed ours
			default:
				err = fmt.Errorf("rdmacm: %w", e)
			}
			return
		}
		select {
		case <-c.done:
		case <-ctx.Done():
			err = ctx.Err()
		}
	})
	return err
}

// Connect connects qp (an RC QP in RESET) to the rdma_cm listener on
// addr:port: REQ (with rdma_cm's header and privateData, at most 56
// bytes), REP, then the QP goes to RTR and RTS and the RTU is sent.
// p may be nil. The REJ of a refusing peer comes back as *RejectError.
func (c *CM) Connect(ctx context.Context, qp *nic.QP, addr netip.Addr, port uint16, privateData []byte, p *ConnParam) (*Conn, error) {
	if qp.Type() != verbs.QPTypeRC {
		return nil, fmt.Errorf("rdmacm: %v: only RC QPs connect", qp)
	}
	d, err := c.dial(qp.QPN(), addr, port, privateData, p)
	if err != nil {
		return nil, err
	}
	if err := toInit(qp, d.cp.Access); err != nil {
		return nil, err
	}
	conn := d.newConn(qp)
	onREP := func(ev cm.Event) error {
		if ev.Type != cm.EventREP {
			return conn.handle(ev)
		}
		conn.privateData = ev.REP.PrivateData
		err := toRTS(qp, d.attrs(&ev.REP))
		conn.ev.handler(ev)
		return err
	}
	id, err := c.m.Connect(d.peer, d.local, d.req, onREP)
	if err != nil {
		return nil, fmt.Errorf("rdmacm: %w", err)
	}
	conn.id = id
	if _, err := wait(ctx, conn.ev, cm.EventEstablished); err != nil {
		id.Destroy()
		return nil, err
	}
	return conn, nil
}

// dialing is an active side's REQ and what its QP gets from the REP.
type dialing struct {
	req         cm.REQ
	cp          ConnParam
	av          verbs.AddressVector
	mtu         verbs.MTU
	peer, local netip.Addr
	sport, port uint16
	ackTimeout  uint8
}

// dial builds the REQ for QP qpn toward addr:port.
func (c *CM) dial(qpn uint32, addr netip.Addr, port uint16, privateData []byte, p *ConnParam) (*dialing, error) {
	if len(privateData) > cm.MaxREQUserData {
		return nil, fmt.Errorf("rdmacm: %d bytes of private data, at most %d", len(privateData), cm.MaxREQUserData)
	}
	addr = addr.Unmap()
	local, sgid, err := c.localAddr(addr)
	if err != nil {
		return nil, err
	}
	cp := p.withDefaults()
	sport := uint16(ephemeralFirst + rand.IntN(ephemeralCount)) // like rdma_cm's bind
	var pd [cm.REQPrivateDataLen]byte
	hdr := cm.CMAHeader{SrcPort: sport, Src: local, Dst: addr}
	if err := hdr.Encode(pd[:]); err != nil {
		return nil, err
	}
	copy(pd[cm.CMAHeaderLen:], privateData)
	mtu := c.pathMTU(0)
	req := cm.REQ{
		ServiceID: cm.ServiceID(cm.PortSpaceTCP, port), LocalQPN: qpn, StartingPSN: rand.Uint32() & 0xFFFFFF,
		ResponderResources: cp.ResponderResources, InitiatorDepth: cp.InitiatorDepth,
		RetryCount: cp.RetryCount, RNRRetryCount: cp.RNRRetryCount, PKey: 0xFFFF, PathMTU: uint8(mtu),
		PrimaryLocalLID: cm.PermissiveLID, PrimaryRemoteLID: cm.PermissiveLID,
		PrimaryLocalGID: verbs.GIDFromAddr(local), PrimaryRemoteGID: verbs.GIDFromAddr(addr),
		// rdma_cm's RoCEv2 flow label: a hash of the ports, so that ECMP
		// spreads connections (cma.c, rdma_calc_flow_label).
		FlowLabel: flowLabel(sport, port), HopLimit: 64, LocalACKTimeout: c.ackTimeout(),
		PrivateData: pd[:],
	}
	return &dialing{req: req, cp: cp, mtu: mtu, peer: addr, local: local, sport: sport, port: port,
		av:         verbs.AddressVector{DGID: verbs.GIDFromAddr(addr), SGIDIndex: sgid, HopLimit: 64, PortNum: 1},
		ackTimeout: cmp.Or(cp.ACKTimeout, c.ackTimeout())}, nil
}

// newConn is the connection of the dialed QP (nil: an external one).
func (d *dialing) newConn(qp *nic.QP) *Conn {
	conn := newConn(qp)
	conn.local, conn.remote = netip.AddrPortFrom(d.local, d.sport), netip.AddrPortFrom(d.peer, d.port)
	return conn
}

// attrs are the QP's RTR and RTS attributes from the REP. Each side's
// Starting PSN is the PSN its receive queue expects (ib_cm: the active
// side's sq_psn is the REP's Starting PSN, and rdma_cm sets rq_psn to its
// own seq_num, the REQ's).
func (d *dialing) attrs(r *cm.REP) ibv.ExternalQPAttrs {
	return ibv.ExternalQPAttrs{AV: d.av, PathMTU: d.mtu, DestQPN: r.LocalQPN, RQPSN: d.req.StartingPSN,
		SQPSN: r.StartingPSN, MaxDestRdAtomic: min(d.cp.ResponderResources, r.InitiatorDepth),
		MaxRdAtomic: min(d.cp.InitiatorDepth, r.ResponderResources), MinRNRTimer: minRNRTimer,
		Timeout: d.ackTimeout, RetryCnt: d.cp.RetryCount, RNRRetry: d.cp.RNRRetryCount}
}

// The ephemeral ports rnic's rdma_cm binds to: 32768..61439.
const (
	ephemeralFirst = 0x8000
	ephemeralCount = 0x7000
)

// flowLabel is rdma_cm's RoCEv2 flow label for a connection between two
// ports (cma.c: (sport × 31 + dport) folded to 20 bits), as rxe's REQs
// carry it.
func flowLabel(sport, dport uint16) uint32 {
	return (uint32(sport)*31 + uint32(dport)) & 0xFFFFF
}
