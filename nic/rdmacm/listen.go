package rdmacm

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"

	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce/cm"
)

// Listener queues the REQs that arrive for one rdma_cm port (TCP port
// space).
type Listener struct {
	c    *CM
	port uint16
	requestQueue[*Request]
}

// Request is a connection request waiting for Accept or Reject.
type Request struct {
	c        *CM
	id       *cm.ID
	req      cm.REQ // PrivateData copied
	hdr      cm.CMAHeader
	user     []byte
	ev       events
	answered bool
	extPSN   uint32    // QPAttrs' PSN, bit 24 set once chosen
	prep     *prepared // PrepareAccept's QP
}

// Listen starts accepting REQs for port (rdma_listen on the TCP port
// space, every address of the NIC). Port 0 picks a free port, as
// rdma_bind_addr does; Listener.Port says which.
func (c *CM) Listen(port uint16) (*Listener, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	if port == 0 {
		if port = c.ephemeralPort(); port == 0 {
			return nil, fmt.Errorf("%w: every ephemeral port has a listener", ErrInUse)
		}
	}
	if c.listeners[port] != nil {
		return nil, fmt.Errorf("%w: %d", ErrInUse, port)
	}
	l := &Listener{c: c, port: port, requestQueue: newRequestQueue[*Request](c.cfg.Backlog)}
	c.listeners[port] = l
	return l, nil
}

// ephemeralPort picks a port no listener has from rdma_cm's ephemeral
// range (the one Connect's source ports come from), or 0 if all have one.
// Caller holds c.mu.
func (c *CM) ephemeralPort() uint16 {
	start := rand.IntN(ephemeralCount)
	for i := range ephemeralCount {
		p := uint16(ephemeralFirst + (start+i)%ephemeralCount)
		if c.listeners[p] == nil {
			return p
		}
	}
	return 0
}

// Port returns the port the listener listens on.
func (l *Listener) Port() uint16 { return l.port }

// Close stops listening; REQs still queued are rejected.
func (l *Listener) Close() error {
	l.c.mu.Lock()
	if l.c.listeners[l.port] == l {
		delete(l.c.listeners, l.port)
	}
	l.c.mu.Unlock()
	l.close()
	return nil
}

// onREQ is the CM's REQ hook: rdma_cm's service ID and header, then the
// listener of the port.
func (c *CM) onREQ(id *cm.ID, req *cm.REQ) bool {
	ps, port, ok := cm.ServicePort(req.ServiceID)
	if !ok || ps != cm.PortSpaceTCP || req.TransportType != 0 {
		return false
	}
	var hdr cm.CMAHeader
	if hdr.Decode(req.PrivateData) != nil {
		return false
	}
	c.mu.Lock()
	l := c.listeners[port]
	c.mu.Unlock()
	if l == nil {
		return false
	}
	r := &Request{c: c, id: id, req: *req, hdr: hdr, ev: make(events, 8)}
	r.req.PrivateData = append([]byte(nil), req.PrivateData...)
	r.user = r.req.PrivateData[cm.CMAHeaderLen:]
	id.SetHandler(r.ev.handler)
	select {
	case l.reqs <- r:
	default:
		id.Reject(cm.RejConsumerReject, nil, nil) // backlog full
	}
	return true
}

// PrivateData returns the consumer's private data of the REQ (the 56 bytes
// after rdma_cm's header, zero padded).
func (r *Request) PrivateData() []byte { return r.user }

// REQ returns the decoded REQ.
func (r *Request) REQ() cm.REQ { return r.req }

// Param is the REQ's parameters from this side (ibv.CMRequest.Param): its
// initiator depth is our responder resources and the other way round.
func (r *Request) Param() ConnParam {
	return ConnParam{ResponderResources: r.req.InitiatorDepth, InitiatorDepth: r.req.ResponderResources,
		RetryCount: r.req.RetryCount, RNRRetryCount: r.req.RNRRetryCount}
}

// RemoteAddr is the peer's address and rdma_cm source port; LocalAddr the
// address and port it connected to.
func (r *Request) RemoteAddr() netip.AddrPort {
	peer, _ := r.id.Peer()
	return netip.AddrPortFrom(peer, r.hdr.SrcPort)
}

func (r *Request) LocalAddr() netip.AddrPort {
	_, local := r.id.Peer()
	_, port, _ := cm.ServicePort(r.req.ServiceID)
	return netip.AddrPortFrom(local, port)
}

// Reject refuses the connection: a REJ with reason "consumer reject" (28)
// and privateData (at most 148 bytes), as rdma_reject sends it.
func (r *Request) Reject(privateData []byte) error {
	if r.answered {
		return fmt.Errorf("rdmacm: request already answered")
	}
	r.answered = true
	if err := r.id.Reject(cm.RejConsumerReject, nil, privateData); err != nil {
		return fmt.Errorf("rdmacm: %w", err)
	}
	return nil
}

// Accept takes qp (an RC QP in RESET) through INIT, RTR and RTS toward the
// requester, sends the REP with privateData (at most 196 bytes) and waits
// for the RTU. p may be nil.
func (r *Request) Accept(ctx context.Context, qp *nic.QP, privateData []byte, p *ConnParam) (*Conn, error) {
	if r.answered {
		return nil, fmt.Errorf("rdmacm: request already answered")
	}
	if len(privateData) > cm.REPPrivateDataLen {
		return nil, fmt.Errorf("rdmacm: %d bytes of private data, at most %d", len(privateData), cm.REPPrivateDataLen)
	}
	if r.prep == nil || r.prep.qp != qp {
		if err := r.PrepareAccept(qp, p); err != nil {
			return nil, err
		}
	}
	r.answered = true
	pr := r.prep
	return r.answer(ctx, qp, qp.QPN(), pr.psn, pr.a, pr.cp, privateData)
}

// prepared is a QP PrepareAccept moved to RTS toward the requester.
type prepared struct {
	qp  *nic.QP
	psn uint32
	a   ibv.ExternalQPAttrs
	cp  ConnParam
}

// PrepareAccept takes qp (an RC QP in RESET, or INIT) through INIT, RTR
// and RTS toward the requester, as librdmacm's rdma_accept does before it
// returns; Accept with the same QP then sends the REP. A QP that cannot
// move rejects the request. p may be nil.
func (r *Request) PrepareAccept(qp *nic.QP, p *ConnParam) error {
	if r.answered {
		return fmt.Errorf("rdmacm: request already answered")
	}
	cp := p.withDefaults()
	psn := rand.Uint32() & 0xFFFFFF
	a, err := r.qpAttrs(cp, psn)
	if err == nil {
		if err = toInit(qp, cp.Access); err == nil {
			err = toRTS(qp, a)
		}
	}
	if err != nil {
		r.answered = true
		r.id.Reject(cm.RejNoResources, nil, nil)
		return err
	}
	r.prep = &prepared{qp: qp, psn: psn, a: a, cp: cp}
	return nil
}

// qpAttrs are the accepting QP's RTR and RTS attributes toward the
// requester with parameters cp, its receive queue expecting psn.
func (r *Request) qpAttrs(cp ConnParam, psn uint32) (ibv.ExternalQPAttrs, error) {
	c := r.c
	peer, local := r.id.Peer()
	_, sgid, err := c.localAddr(peer)
	if err != nil {
		return ibv.ExternalQPAttrs{}, err
	}
	for i, g := range c.n.GIDs() {
		if g.Unmap() == local { // answer from the address the REQ came to
			sgid = uint8(i)
		}
	}
	q := &r.req
	hop := q.HopLimit
	if hop == 0 {
		hop = 64
	}
	// As rdma_cm over ib_cm: our receive queue expects the PSN our REP
	// announces, our send queue starts at the REQ's.
	return ibv.ExternalQPAttrs{
		AV: verbs.AddressVector{DGID: verbs.GIDFromAddr(peer), SGIDIndex: sgid, HopLimit: hop,
			TrafficClass: q.TrafficClass, FlowLabel: q.FlowLabel, PortNum: 1},
		PathMTU: c.pathMTU(q.PathMTU), DestQPN: q.LocalQPN, RQPSN: psn, SQPSN: q.StartingPSN,
		MaxDestRdAtomic: min(cp.ResponderResources, q.InitiatorDepth),
		MaxRdAtomic:     min(cp.InitiatorDepth, q.ResponderResources), MinRNRTimer: minRNRTimer,
		Timeout: cmp.Or(cp.ACKTimeout, q.LocalACKTimeout, c.ackTimeout()), RetryCnt: q.RetryCount,
		RNRRetry: q.RNRRetryCount}, nil
}

// answer sends the REP for QP qpn (qp, or nil for an external one)
// whose receive queue expects psn, and waits for the RTU.
func (r *Request) answer(ctx context.Context, qp *nic.QP, qpn, psn uint32, a ibv.ExternalQPAttrs, cp ConnParam, privateData []byte) (*Conn, error) {
	conn := newConn(qp)
	conn.id = r.id
	conn.local, conn.remote = r.LocalAddr(), r.RemoteAddr()
	conn.privateData = r.user
	conn.ev = r.ev
	rep := cm.REP{LocalQPN: qpn, StartingPSN: psn, ResponderResources: a.MaxDestRdAtomic, InitiatorDepth: a.MaxRdAtomic,
		TargetACKDelay: 15, RNRRetryCount: cp.RNRRetryCount, PrivateData: privateData}
	r.id.SetHandler(conn.handle)
	if err := r.id.Accept(rep); err != nil {
		return nil, fmt.Errorf("rdmacm: %w", err)
	}
	if _, err := wait(ctx, conn.ev, cm.EventEstablished); err != nil {
		r.id.Destroy()
		return nil, err
	}
	return conn, nil
}
