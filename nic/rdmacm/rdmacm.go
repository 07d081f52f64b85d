package rdmacm

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce/cm"
)

// Config tunes the CM; the zero value is rdma_cm's behaviour.
type Config struct {
	// ResponseTimeout, PacketLifeTime and MaxRetries are the CM's timing
	// (cm.Config): rdma_cm's 20, 18 and 15 when zero (about 6.4 s per try).
	ResponseTimeout uint8
	PacketLifeTime  uint8
	MaxRetries      uint8
	// TimeWait is how long a closed connection's IDs linger.
	TimeWait time.Duration
	// Backlog is how many REQs a listener queues before rejecting (16).
	Backlog int
}

// ConnParam are the connection parameters (struct rdma_conn_param).
type ConnParam struct {
	// ResponderResources (IRD) and InitiatorDepth (ORD): outstanding
	// RDMA READ/atomic requests accepted and issued (1 each if zero).
	ResponderResources uint8
	InitiatorDepth     uint8
	// RetryCount and RNRRetryCount (7 each if zero, as rping uses).
	RetryCount    uint8
	RNRRetryCount uint8
	// Access is the QP's remote access (READ, WRITE and atomics if zero).
	Access memory.Access
	// ACKTimeout is the QP's local ACK timeout (RDMA_OPTION_ID_ACK_TIMEOUT;
	// the packet life time's if zero, at most 31).
	ACKTimeout uint8
}

func (p *ConnParam) withDefaults() ConnParam {
	q := ConnParam{ResponderResources: 1, InitiatorDepth: 1, RetryCount: 7, RNRRetryCount: 7,
		Access: memory.LocalWrite | memory.RemoteWrite | memory.RemoteRead | memory.RemoteAtomic}
	if p == nil {
		return q
	}
	if p.ResponderResources != 0 {
		q.ResponderResources = p.ResponderResources
	}
	if p.InitiatorDepth != 0 {
		q.InitiatorDepth = p.InitiatorDepth
	}
	if p.RetryCount != 0 {
		q.RetryCount = min(p.RetryCount, 7)
	}
	if p.RNRRetryCount != 0 {
		q.RNRRetryCount = min(p.RNRRetryCount, 7)
	}
	if p.Access != 0 {
		q.Access = p.Access
	}
	q.ACKTimeout = min(p.ACKTimeout, 31)
	return q
}

// Errors.
var (
	// ErrTimeout: the peer never answered (the CM's retries ran out).
	ErrTimeout = errors.New("rdmacm: timed out")
	// ErrInUse: the port already has a listener.
	ErrInUse = errors.New("rdmacm: port in use")
	// ErrClosed: the CM or listener is closed.
	ErrClosed = errors.New("rdmacm: closed")
	// ErrNoAddress: the NIC has no address of the peer's family.
	ErrNoAddress = errors.New("rdmacm: no local address toward the peer")
)

// RejectError is returned when the peer rejected the connection.
type RejectError struct {
	Reason cm.RejReason
	// PrivateData is the REJ's private data field (148 bytes: the
	// consumer's bytes, zero padded).
	PrivateData []byte
}

func (e *RejectError) Error() string { return fmt.Sprintf("rdmacm: rejected: %v", e.Reason) }

// Unwrap makes a rejection ibv.ErrRejected for callers of any backend.
func (e *RejectError) Unwrap() error { return ibv.ErrRejected }

// RejectReason and RejectPrivateData make it an ibv.RejectDetail.
func (e *RejectError) RejectReason() uint16      { return uint16(e.Reason) }
func (e *RejectError) RejectPrivateData() []byte { return e.PrivateData }

// CM is the connection manager of one NIC.
type CM struct {
	n   *embedded.NIC
	cfg Config
	m   *cm.Manager

	mu        sync.Mutex
	listeners map[uint16]*Listener
	// udListeners are the UD (RDMA_PS_UDP) listeners: another port space.
	udListeners map[uint16]*UDListener
	closed      bool
}

// New attaches a CM to the NIC's QP1. Close detaches it.
func New(n *embedded.NIC, cfg Config) (*CM, error) {
	if cfg.Backlog <= 0 {
		cfg.Backlog = 16
	}
	c := &CM{n: n, cfg: cfg, listeners: make(map[uint16]*Listener), udListeners: make(map[uint16]*UDListener)}
	m, err := cm.New(cm.Config{Port: n.Stack, Clock: n.Stack.Clock(), GUID: n.Query().NodeGUID,
		ResponseTimeout: cfg.ResponseTimeout, PacketLifeTime: cfg.PacketLifeTime, MaxRetries: cfg.MaxRetries,
		TimeWait: cfg.TimeWait, OnREQ: c.onREQ, OnSIDR: c.onSIDR})
	if err != nil {
		return nil, fmt.Errorf("rdmacm: %w", err)
	}
	c.m = m
	m.Start()
	n.Stack.SetGSIHandler(m.Handler())
	return c, nil
}

// Manager returns the underlying IB CM (its counters).
func (c *CM) Manager() *cm.Manager { return c.m }

// Close detaches the CM from QP1 and stops it; listeners close.
func (c *CM) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	ls, uls := c.listeners, c.udListeners
	c.listeners, c.udListeners = nil, nil
	c.mu.Unlock()
	for _, l := range ls {
		l.close()
	}
	for _, l := range uls {
		l.close()
	}
	c.n.Stack.SetGSIHandler(nil)
	c.m.Close()
	return nil
}

// localAddr picks the NIC's address (and its GID index) toward peer.
func (c *CM) localAddr(peer netip.Addr) (netip.Addr, uint8, error) {
	peer = peer.Unmap()
	for i, g := range c.n.GIDs() {
		a := g.Unmap()
		if a.Is4() == peer.Is4() && !a.IsLinkLocalUnicast() {
			return a, uint8(i), nil
		}
	}
	return netip.Addr{}, 0, fmt.Errorf("%w: %v", ErrNoAddress, peer)
}

// pathMTU is the largest path MTU both ends allow.
func (c *CM) pathMTU(peer uint8) verbs.MTU {
	pa, err := c.n.QueryPort(1)
	mtu := verbs.MTU1024
	if err == nil {
		mtu = pa.ActiveMTU
	}
	if peer != 0 && verbs.MTU(peer) < mtu {
		mtu = verbs.MTU(peer)
	}
	return mtu
}

// ackTimeout is the local ACK timeout rdma_cm derives from the packet
// life time (+1, at most 31).
func (c *CM) ackTimeout() uint8 {
	plt := c.cfg.PacketLifeTime
	if plt == 0 {
		plt = 18
	}
	return min(plt+1, 31)
}

// toInit moves a RESET QP to INIT.
func toInit(qp *nic.QP, access memory.Access) error {
	if err := qp.Modify(&verbs.QPAttr{State: verbs.QPSInit, PortNum: 1, AccessFlags: access},
		verbs.AttrState|verbs.AttrPKeyIndex|verbs.AttrPort|verbs.AttrAccessFlags); err != nil {
		return fmt.Errorf("rdmacm: QP to INIT: %w", err)
	}
	return nil
}

// toRTS moves an INIT QP through RTR to RTS with a's attributes, those
// rdma_init_qp_attr gives an external QP.
func toRTS(qp *nic.QP, a ibv.ExternalQPAttrs) error {
	rtr := verbs.QPAttr{State: verbs.QPSRTR, PathMTU: a.PathMTU, DestQPN: a.DestQPN, RQPSN: a.RQPSN,
		MaxDestRdAtomic: a.MaxDestRdAtomic, MinRNRTimer: a.MinRNRTimer, AV: a.AV}
	if err := qp.Modify(&rtr, verbs.AttrState|verbs.AttrAV|verbs.AttrPathMTU|verbs.AttrDestQPN|
		verbs.AttrRQPSN|verbs.AttrMaxDestRdAtomic|verbs.AttrMinRNRTimer); err != nil {
		return fmt.Errorf("rdmacm: QP to RTR: %w", err)
	}
	rts := verbs.QPAttr{State: verbs.QPSRTS, SQPSN: a.SQPSN, Timeout: a.Timeout, RetryCnt: a.RetryCnt,
		RNRRetry: a.RNRRetry, MaxRdAtomic: a.MaxRdAtomic}
	if err := qp.Modify(&rts, verbs.AttrState|verbs.AttrSQPSN|verbs.AttrTimeout|verbs.AttrRetryCnt|
		verbs.AttrRNRRetry|verbs.AttrMaxQPRdAtomic); err != nil {
		return fmt.Errorf("rdmacm: QP to RTS: %w", err)
	}
	return nil
}

// minRNRTimer is the RNR NAK timer rdma_cm's QPs get at RTR (code 12,
// 0.64 ms).
const minRNRTimer = 12

// events turns an ID's callbacks into a channel.
type events chan cm.Event

func (e events) handler(ev cm.Event) error {
	select {
	case e <- ev:
	default: // a full queue only loses events nobody waits for
	}
	return nil
}

// wait waits for one of the wanted events; anything else that ends a
// connection is an error.
func wait(ctx context.Context, ev events, want cm.EventType) (cm.Event, error) {
	for {
		select {
		case <-ctx.Done():
			return cm.Event{}, ctx.Err()
		case e := <-ev:
			switch e.Type {
			case want:
				return e, nil
			case cm.EventRejected:
				return e, &RejectError{Reason: e.Reason, PrivateData: e.PrivateData}
			case cm.EventTimeout:
				return e, ErrTimeout
			case cm.EventDisconnected:
				return e, fmt.Errorf("rdmacm: disconnected while waiting for %v", want)
			}
		}
	}
}
