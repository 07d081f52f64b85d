package rdmacm

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"

	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce/cm"
)

// UD ids (RDMA_PS_UDP): no connection, only Service ID Resolution. The
// client sends a SIDR_REQ for the UDP port's service ID with rdma_cm's
// header in its private data; the listener's consumer answers with its UD
// QP's number and Q_Key (or rejects), and the client addresses its sends
// with them and the route's address vector. No QP changes state: both
// QPs are brought to RTS by their owners, with the Q_Key rdma_cm uses.

// UDPQKey is rdma_cm's Q_Key for RDMA_PS_UDP ids (RDMA_UDP_QKEY): both
// sides' QPs use it, and a SIDR_REP with another is refused, as Linux's
// cma does.
const UDPQKey = 0x01234567

// MaxSIDRUserData is how much consumer private data a SIDR_REQ carries
// after rdma_cm's header.
const MaxSIDRUserData = cm.SIDRREQPrivateDataLen - cm.CMAHeaderLen

// UnreachableError is a SIDR_REP whose status is not "valid": no listener
// (SIDRUnsupported) or a rejection. rdma_cm reports it as
// RDMA_CM_EVENT_UNREACHABLE.
type UnreachableError struct {
	Status      cm.SIDRStatus
	PrivateData []byte
}

func (e *UnreachableError) Error() string { return fmt.Sprintf("rdmacm: unreachable: %v", e.Status) }

// Unwrap makes it ibv.ErrUnreachable for callers of any backend.
func (e *UnreachableError) Unwrap() error { return ibv.ErrUnreachable }

// ErrQKey: the SIDR_REP's Q_Key is not rdma_cm's (RDMA_CM_EVENT_ADDR_ERROR
// in Linux's cma).
var ErrQKey = errors.New("rdmacm: SIDR_REP with a foreign Q_Key")

// UDPeer is what a UD resolve learns: where to send.
type UDPeer struct {
	QPN, QKey   uint32
	AV          verbs.AddressVector
	PrivateData []byte // the SIDR_REP's 136 bytes
	Local       netip.AddrPort
	Remote      netip.AddrPort
}

// UDListener queues the SIDR_REQs for one rdma_cm UDP port.
type UDListener struct {
	c    *CM
	port uint16
	requestQueue[*UDRequest]
}

// UDRequest is a resolution request waiting for Accept or Reject.
type UDRequest struct {
	r    *cm.SIDRRequest
	hdr  cm.CMAHeader
	port uint16
	user []byte
	pkey uint16
}

// ListenUD starts answering SIDR_REQs for port (rdma_listen on a
// RDMA_PS_UDP id). Port 0 picks a free one.
func (c *CM) ListenUD(port uint16) (*UDListener, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	for port == 0 {
		p := uint16(ephemeralFirst + rand.IntN(ephemeralCount))
		if c.udListeners[p] == nil {
			port = p
		}
	}
	if c.udListeners[port] != nil {
		return nil, fmt.Errorf("%w: UDP %d", ErrInUse, port)
	}
	l := &UDListener{c: c, port: port, requestQueue: newRequestQueue[*UDRequest](c.cfg.Backlog)}
	c.udListeners[port] = l
	return l, nil
}

// Port returns the port the listener listens on.
func (l *UDListener) Port() uint16 { return l.port }

// Close stops listening; requests still queued are rejected.
func (l *UDListener) Close() error {
	l.c.mu.Lock()
	if l.c.udListeners[l.port] == l {
		delete(l.c.udListeners, l.port)
	}
	l.c.mu.Unlock()
	l.close()
	return nil
}

// onSIDR is the CM's SIDR_REQ hook: rdma_cm's UDP service ID and header,
// then the port's listener. Without one the request is answered "service
// ID not supported", which the client reports as unreachable.
func (c *CM) onSIDR(r *cm.SIDRRequest, req *cm.SIDRREQ) bool {
	ps, port, ok := cm.ServicePort(req.ServiceID)
	if !ok || ps != cm.PortSpaceUDP {
		return false
	}
	var hdr cm.CMAHeader
	if hdr.Decode(req.PrivateData) != nil {
		r.Reply(cm.SIDRREP{Status: cm.SIDRUnsupportedVersion})
		return true
	}
	c.mu.Lock()
	l := c.udListeners[port]
	c.mu.Unlock()
	if l == nil {
		return false
	}
	u := &UDRequest{r: r, hdr: hdr, port: port, pkey: req.PKey,
		user: append([]byte(nil), req.PrivateData[cm.CMAHeaderLen:]...)}
	select {
	case l.reqs <- u:
	default:
		r.Reply(cm.SIDRREP{Status: cm.SIDRRejected}) // backlog full
	}
	return true
}

// PrivateData returns the consumer's private data of the SIDR_REQ (the
// 180 bytes after rdma_cm's header, zero padded).
func (u *UDRequest) PrivateData() []byte { return u.user }

// RemoteAddr is the requester's address and rdma_cm source port;
// LocalAddr the address and port it asked.
func (u *UDRequest) RemoteAddr() netip.AddrPort {
	peer, _ := u.r.Peer()
	return netip.AddrPortFrom(peer, u.hdr.SrcPort)
}

func (u *UDRequest) LocalAddr() netip.AddrPort {
	_, local := u.r.Peer()
	return netip.AddrPortFrom(local, u.port)
}

// Accept answers with qp's number and Q_Key (qp is a UD QP past RESET) and
// privateData (at most 136 bytes).
func (u *UDRequest) Accept(qp *nic.QP, privateData []byte) error {
	if qp.Type() != verbs.QPTypeUD {
		return fmt.Errorf("rdmacm: %v: a UD id answers with a UD QP", qp)
	}
	a, err := qp.Query()
	if err != nil {
		return fmt.Errorf("rdmacm: %w", err)
	}
	return u.reply(cm.SIDRREP{Status: cm.SIDRValid, QPN: qp.QPN(), QKey: a.QKey, PrivateData: privateData})
}

// Reject answers "rejected" with privateData, as rdma_reject on a UD id.
func (u *UDRequest) Reject(privateData []byte) error {
	return u.reply(cm.SIDRREP{Status: cm.SIDRRejected, PrivateData: privateData})
}

func (u *UDRequest) reply(rep cm.SIDRREP) error {
	if err := u.r.Reply(rep); err != nil {
		return fmt.Errorf("rdmacm: %w", err)
	}
	return nil
}

// ResolveUD asks the UD listener on addr:port for its QP (rdma_connect
// on a RDMA_PS_UDP id): a SIDR_REQ with rdma_cm's header and
// privateData (at most 180 bytes), retried as a REQ is. The answer's
// QPN, Q_Key and the route's address vector are what the client's UD
// sends use.
func (c *CM) ResolveUD(ctx context.Context, addr netip.Addr, port uint16, privateData []byte) (*UDPeer, error) {
	if len(privateData) > MaxSIDRUserData {
		return nil, fmt.Errorf("rdmacm: %d bytes of private data, at most %d", len(privateData), MaxSIDRUserData)
	}
	addr = addr.Unmap()
	local, sgid, err := c.localAddr(addr)
	if err != nil {
		return nil, err
	}
	sport := uint16(ephemeralFirst + rand.IntN(ephemeralCount))
	var pd [cm.SIDRREQPrivateDataLen]byte
	hdr := cm.CMAHeader{SrcPort: sport, Src: local, Dst: addr}
	if err := hdr.Encode(pd[:]); err != nil {
		return nil, err
	}
	copy(pd[cm.CMAHeaderLen:], privateData)
	res := make(chan cm.SIDRResult, 1)
	q, err := c.m.Resolve(addr, local, cm.SIDRREQ{PKey: 0xFFFF, ServiceID: cm.ServiceID(cm.PortSpaceUDP, port),
		PrivateData: pd[:]}, func(r cm.SIDRResult) { res <- r })
	if err != nil {
		return nil, fmt.Errorf("rdmacm: %w", err)
	}
	select {
	case r := <-res:
		return udPeer(r, addr, sgid, netip.AddrPortFrom(local, sport), netip.AddrPortFrom(addr, port))
	case <-ctx.Done():
		q.Cancel()
		return nil, ctx.Err()
	}
}

// udPeer turns a SIDR result into the peer's addressing, or the error
// Linux's cma_sidr_rep_handler reports.
func udPeer(r cm.SIDRResult, addr netip.Addr, sgid uint8, local, remote netip.AddrPort) (*UDPeer, error) {
	switch {
	case r.TimedOut:
		return nil, ErrTimeout
	case r.Status != cm.SIDRValid:
		return nil, &UnreachableError{Status: r.Status, PrivateData: r.PrivateData}
	case r.QKey != UDPQKey:
		return nil, fmt.Errorf("%w: %#x", ErrQKey, r.QKey)
	}
	av := verbs.AddressVector{DGID: verbs.GIDFromAddr(addr), SGIDIndex: sgid, HopLimit: 64, PortNum: 1}
	return &UDPeer{QPN: r.QPN, QKey: r.QKey, AV: av, PrivateData: r.PrivateData, Local: local, Remote: remote}, nil
}

// RejectReason and RejectPrivateData give the SIDR status and the
// SIDR_REP's private data to the daemon's clients (ibv.RejectDetail).
func (e *UnreachableError) RejectReason() uint16      { return uint16(e.Status) }
func (e *UnreachableError) RejectPrivateData() []byte { return e.PrivateData }
