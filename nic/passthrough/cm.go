//go:build verbs

// ibv.ConnManager through librdmacm, with QPs the program created itself:
// rdma_connect and rdma_accept name the QP by number (conn_param.qp_num),
// and rnic moves it through the states rdma_init_qp_attr gives, in the
// order librdmacm itself uses for a QP it owns (ucma_modify_qp_rtr/rts).
// On iWARP the kernel's iw_cm finds the QP by number and moves it to RTS
// with the MPA exchange, which is why siw works this way too.
//
// One rdma_cm event channel per device, created on first use; a goroutine
// reads it (non-blocking, in Go's poller), acknowledges each event at once
// and hands it to the listener or connection whose id it concerns.

package passthrough

/*
#include <stdlib.h>
#include <sys/socket.h>
#include "shim.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"sync"
	"syscall"
	"unsafe"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
)

// resolveTimeoutMS bounds address and route resolution, as rping's 2 s.
const resolveTimeoutMS = 2000

// listenBacklog is rdma_listen's backlog and the requests a listener
// queues before refusing more.
const listenBacklog = 16

// RejectError is CMConnect's error when the peer rejected the connection;
// it unwraps to ibv.ErrRejected.
type RejectError struct {
	// Status is rdma_cm's event status: the IB CM reject reason (28 is
	// "consumer reject"), or a negative errno on iWARP.
	Status      int
	PrivateData []byte
}

func (e *RejectError) Error() string {
	return fmt.Sprintf("passthrough: connection rejected (status %d)", e.Status)
}

func (e *RejectError) Unwrap() error { return ibv.ErrRejected }

// cmEvent is an rdma_cm event, copied out of C.
type cmEvent struct {
	typ         C.uint32_t
	status      int
	id          *C.struct_rdma_cm_id // a connect request's new id
	qpNum       uint32
	rr, depth   uint8
	retry, rnr  uint8 // a connect request's retry counts
	privateData []byte
	device      string
	local       netip.AddrPort
	remote      netip.AddrPort
}

// cmOwner is whatever an id's events go to.
type cmOwner interface {
	event(ev *cmEvent)
	// abort tells the owner the device is closing.
	abort()
}

// cmState is a device's rdma_cm.
type cmState struct {
	once sync.Once
	err  error
	ch   *C.struct_rdma_event_channel
	file *os.File
	wg   sync.WaitGroup

	mu     sync.Mutex
	closed bool
	next   uintptr
	ids    map[uintptr]*cmID
}

// cmID is an rdma_cm_id and the owner of its events.
type cmID struct {
	cm    *cmState
	ctx   uintptr
	owner cmOwner

	mu sync.Mutex
	c  *C.struct_rdma_cm_id // nil once destroyed
}

// cmInit opens the event channel on first use.
func (d *device) cmInit() (*cmState, error) {
	s := &d.cm
	s.once.Do(func() {
		ch, err := C.rdma_create_event_channel()
		if ch == nil {
			s.err = fmt.Errorf("passthrough: rdma_create_event_channel: %w", cErr(err))
			return
		}
		f, err := pollable(int(ch.fd), "rdma-cm")
		if err != nil {
			C.rdma_destroy_event_channel(ch)
			s.err = fmt.Errorf("passthrough: %w", err)
			return
		}
		s.ch, s.file, s.ids = ch, f, make(map[uintptr]*cmID)
		s.wg.Add(1)
		go readEvents(&s.wg, f, s.nextEvent)
	})
	if s.err != nil {
		return nil, s.err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || d.closed.Load() {
		return nil, errClosed()
	}
	return s, nil
}

// newID creates an rdma_cm_id whose events go to owner.
func (s *cmState) newID(owner cmOwner) (*cmID, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errClosed()
	}
	s.next++
	id := &cmID{cm: s, ctx: s.next, owner: owner}
	if r, err := C.rn_create_id(s.ch, C.uintptr_t(id.ctx), &id.c); r != 0 {
		return nil, fmt.Errorf("passthrough: rdma_create_id: %w", cErr(err))
	}
	s.ids[id.ctx] = id
	return id, nil
}

// adopt takes a connect request's new id, giving its events to owner. It
// runs on the event goroutine, before the next event is read, so none of
// the id's events can go to the listener.
func (s *cmState) adopt(c *C.struct_rdma_cm_id, owner cmOwner) *cmID {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next++
	id := &cmID{cm: s, ctx: s.next, owner: owner, c: c}
	C.rn_set_id_context(c, C.uintptr_t(id.ctx))
	s.ids[id.ctx] = id
	return id
}

// do runs f on the live id, or fails once it is destroyed.
func (id *cmID) do(f func(c *C.struct_rdma_cm_id) error) error {
	id.mu.Lock()
	defer id.mu.Unlock()
	if id.c == nil {
		return errClosed()
	}
	return f(id.c)
}

// destroy destroys the id (rdma_destroy_id); it may run more than once.
// It never runs on the event goroutine: rdma_destroy_id waits for the id's
// events to be acknowledged, which rnic does as it reads them, but a
// blocking call must not stop the reader.
func (id *cmID) destroy() {
	id.mu.Lock()
	c := id.c
	id.c = nil
	id.mu.Unlock()
	if c == nil {
		return
	}
	C.rdma_destroy_id(c)
	id.cm.mu.Lock()
	delete(id.cm.ids, id.ctx)
	id.cm.mu.Unlock()
}

// addrs returns the id's local and remote addresses.
func (id *cmID) addrs() (local, remote netip.AddrPort) {
	id.do(func(c *C.struct_rdma_cm_id) error {
		var l, r C.struct_rn_addr
		C.rn_id_addrs(c, &l, &r)
		local, remote = addrFromC(&l), addrFromC(&r)
		return nil
	})
	return local, remote
}

func addrFromC(a *C.struct_rn_addr) netip.AddrPort {
	if a.family == 0 {
		return netip.AddrPort{}
	}
	ip := netip.AddrFrom16(*(*[16]byte)(unsafe.Pointer(&a.addr)))
	if a.family == C.AF_INET {
		ip = ip.Unmap()
	}
	return netip.AddrPortFrom(ip, uint16(a.port))
}

func addrToC(ap netip.AddrPort) C.struct_rn_addr {
	a := C.struct_rn_addr{family: C.AF_INET6, port: C.uint16_t(ap.Port())}
	if ap.Addr().Unmap().Is4() {
		a.family = C.AF_INET
	}
	*(*[16]byte)(unsafe.Pointer(&a.addr)) = ap.Addr().As16()
	return a
}

// nextEvent reads one event and hands it to its id's owner.
func (s *cmState) nextEvent() error {
	var ev C.struct_rn_cm_event
	if r, err := C.rn_get_cm_event(s.ch, &ev); r != 0 {
		if err == nil {
			err = syscall.EIO
		}
		return err
	}
	e := &cmEvent{
		typ:    ev.event,
		status: int(ev.status),
		id:     ev.id,
		qpNum:  uint32(ev.qp_num),
		rr:     uint8(ev.responder_resources),
		depth:  uint8(ev.initiator_depth),
		retry:  uint8(ev.retry_count),
		rnr:    uint8(ev.rnr_retry_count),
		device: C.GoString(&ev.device[0]),
		local:  addrFromC(&ev.local),
		remote: addrFromC(&ev.remote),
	}
	if n := int(ev.private_data_len); n > 0 {
		e.privateData = C.GoBytes(unsafe.Pointer(&ev.private_data[0]), C.int(n))
	}
	s.mu.Lock()
	id := s.ids[uintptr(ev.id_ctx)]
	s.mu.Unlock()
	if id == nil {
		if e.typ == C.RDMA_CM_EVENT_CONNECT_REQUEST {
			// A listener being closed: refuse. The new id has had no
			// event, so rdma_destroy_id does not wait.
			C.rdma_destroy_id(e.id)
		}
		return nil
	}
	id.owner.event(e)
	return nil
}

// close destroys every id, wakes their owners and closes the channel.
func (s *cmState) close() {
	s.mu.Lock()
	if s.ids == nil || s.closed {
		s.closed = true
		s.mu.Unlock()
		return
	}
	s.closed = true
	ids := make([]*cmID, 0, len(s.ids))
	for _, id := range s.ids {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	for _, id := range ids {
		id.owner.abort()
		id.destroy()
	}
	s.file.Close()
	s.wg.Wait()
	C.rdma_destroy_event_channel(s.ch)
}

// cmEventName names an event type for errors (rdma_event_str).
func cmEventName(t C.uint32_t) string {
	return C.GoString(C.rdma_event_str(C.enum_rdma_cm_event_type(t)))
}

// qpOf unwraps a QP of d for the CM: an RC QP in RESET, or in INIT (as
// rdma_create_qp leaves one, so that receives can be posted before the
// connection exists).
func (d *device) qpOf(x ibv.QP) (*qp, error) {
	q, ok := x.(*qp)
	if !ok || q.d != d {
		return nil, fmt.Errorf("passthrough: rdma_cm: %w", ibv.ErrForeign)
	}
	if q.typ != verbs.QPTypeRC {
		return nil, fmt.Errorf("passthrough: rdma_cm: a %v QP: only RC connects: %w", q.typ, verbs.ErrInvalid)
	}
	if st := q.State(); st != verbs.QPSReset && st != verbs.QPSInit {
		return nil, fmt.Errorf("passthrough: rdma_cm: QP %#x is in %v, not RESET or INIT: %w", q.qpn, st, verbs.ErrInvalidState)
	}
	return q, nil
}

// params fills in rdma_cm's defaults for p's zero fields, bounded by what
// the device supports.
func (d *device) params(p *ibv.ConnParam) ibv.ConnParam {
	out := ibv.ConnParam{ResponderResources: 1, InitiatorDepth: 1, RetryCount: 7, RNRRetryCount: 7}
	if p != nil {
		if p.ResponderResources != 0 {
			out.ResponderResources = p.ResponderResources
		}
		if p.InitiatorDepth != 0 {
			out.InitiatorDepth = p.InitiatorDepth
		}
		if p.RetryCount != 0 {
			out.RetryCount = min(p.RetryCount, 7)
		}
		if p.RNRRetryCount != 0 {
			out.RNRRetryCount = min(p.RNRRetryCount, 7)
		}
		out.Access = p.Access
	}
	if m := d.attr.MaxQPRdAtom; m > 0 && int(out.ResponderResources) > m {
		out.ResponderResources = uint8(min(m, 255))
	}
	if m := d.attr.MaxQPInitRdAtom; m > 0 && int(out.InitiatorDepth) > m {
		out.InitiatorDepth = uint8(min(m, 255))
	}
	return out
}

// CMListen listens on port of every IPv4 address (rdma_bind_addr to
// 0.0.0.0, rdma_listen); requests that arrive on another RDMA device are
// rejected. Port 0 picks a free port.
func (d *device) CMListen(port uint16) (ibv.CMListener, error) {
	s, err := d.cmInit()
	if err != nil {
		return nil, err
	}
	l := &listener{d: d, reqs: make(chan *request, listenBacklog), done: make(chan struct{})}
	id, err := s.newID(l)
	if err != nil {
		return nil, err
	}
	l.id = id
	err = id.do(func(c *C.struct_rdma_cm_id) error {
		a := addrToC(netip.AddrPortFrom(netip.IPv4Unspecified(), port))
		if r, err := C.rn_bind_addr(c, &a); r != 0 {
			return fmt.Errorf("rdma_bind_addr to port %d: %w", port, cErr(err))
		}
		if r, err := C.rdma_listen(c, listenBacklog); r != 0 {
			return fmt.Errorf("rdma_listen on port %d: %w", port, cErr(err))
		}
		return nil
	})
	if err != nil {
		id.destroy()
		return nil, fmt.Errorf("passthrough: %w", err)
	}
	local, _ := id.addrs()
	l.port = local.Port()
	return l, nil
}

type listener struct {
	d    *device
	id   *cmID
	port uint16
	reqs chan *request
	once sync.Once
	done chan struct{}
}

func (l *listener) Port() uint16 { return l.port }

func (l *listener) event(ev *cmEvent) {
	if ev.typ != C.RDMA_CM_EVENT_CONNECT_REQUEST {
		return
	}
	r := &request{
		conn: newConn(l.d),
		priv: ev.privateData, local: ev.local, remote: ev.remote,
		remoteQPN: ev.qpNum, rr: ev.rr, depth: ev.depth, retry: ev.retry, rnr: ev.rnr,
	}
	r.conn.id = l.d.cm.adopt(ev.id, r.conn)
	if ev.device != l.d.name {
		// The request came in on another RDMA device's address.
		go r.Reject(nil)
		return
	}
	select {
	case l.reqs <- r:
	default:
		go r.Reject(nil) // backlog full
	}
}

func (l *listener) abort() { l.once.Do(func() { close(l.done) }) }

func (l *listener) Accept(ctx context.Context) (ibv.CMRequest, error) {
	select {
	case r := <-l.reqs:
		return r, nil
	case <-l.done:
		return nil, fmt.Errorf("passthrough: accept: listener %w", verbs.ErrClosed)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close stops listening and rejects the requests not yet accepted.
func (l *listener) Close() error {
	l.abort()
	l.id.destroy()
	for {
		select {
		case r := <-l.reqs:
			r.Reject(nil)
		default:
			return nil
		}
	}
}

// request is a connection request not yet answered.
type request struct {
	conn          *conn
	priv          []byte
	local, remote netip.AddrPort
	remoteQPN     uint32
	rr, depth     uint8 // what the requester asked for, from our side
	retry, rnr    uint8
	answered      sync.Mutex
	done          bool
}

func (r *request) PrivateData() []byte        { return r.priv }
func (r *request) LocalAddr() netip.AddrPort  { return r.local }
func (r *request) RemoteAddr() netip.AddrPort { return r.remote }

// Param is what the kernel's rdma_cm reported in CONNECT_REQUEST.
func (r *request) Param() ibv.ConnParam {
	return ibv.ConnParam{ResponderResources: r.rr, InitiatorDepth: r.depth, RetryCount: r.retry, RNRRetryCount: r.rnr}
}

// answer claims the request for Accept or Reject.
func (r *request) answer() error {
	r.answered.Lock()
	defer r.answered.Unlock()
	if r.done {
		return fmt.Errorf("passthrough: connection request already answered: %w", verbs.ErrInvalid)
	}
	r.done = true
	return nil
}

func (r *request) Reject(privateData []byte) error {
	if err := r.answer(); err != nil {
		return err
	}
	if len(privateData) > 255 {
		privateData = privateData[:255]
	}
	err := r.conn.id.do(func(c *C.struct_rdma_cm_id) error {
		var p unsafe.Pointer
		if len(privateData) > 0 {
			p = C.CBytes(privateData)
			defer C.free(p)
		}
		if r, err := C.rdma_reject(c, p, C.uint8_t(len(privateData))); r != 0 {
			return fmt.Errorf("passthrough: rdma_reject: %w", cErr(err))
		}
		return nil
	})
	r.conn.id.destroy()
	return err
}

func (r *request) Accept(ctx context.Context, x ibv.QP, privateData []byte, p *ibv.ConnParam) (ibv.CMConn, error) {
	d := r.conn.d
	q, err := d.qpOf(x)
	if err != nil {
		return nil, err
	}
	if err := r.answer(); err != nil {
		return nil, err
	}
	c := r.conn
	c.qp, c.priv, c.remoteQPN = q, r.priv, r.remoteQPN
	par := d.params(p)
	// As rdma_accept does for a QP it owns: INIT, RTR with our responder
	// resources, RTS with our initiator depth, then the REP (or MPA
	// reply); established when the RTU arrives.
	err = c.toRTS(par, func(a *C.struct_ibv_qp_attr) { a.max_dest_rd_atomic = C.uint8_t(par.ResponderResources) },
		func(a *C.struct_ibv_qp_attr) { a.max_rd_atomic = C.uint8_t(par.InitiatorDepth) })
	if err == nil {
		err = c.connect(q.qpn, privateData, par, true)
	}
	if err == nil {
		_, err = c.wait(ctx, C.RDMA_CM_EVENT_ESTABLISHED)
	}
	if err == nil && d.iwarp {
		c.qp.set.Store(uint32(verbs.QPSRTS)) // iw_cm moved it with the MPA exchange
	}
	if err != nil {
		c.fail()
		return nil, fmt.Errorf("passthrough: accept from %v: %w", r.remote, err)
	}
	c.established()
	return c, nil
}

// CMConnect resolves addr:port to a route over this device, brings qp to
// INIT, sends the request and, once answered, brings qp to RTS (IB/RoCE:
// rdma_establish sends the RTU; iWARP: the kernel moved it already).
func (d *device) CMConnect(ctx context.Context, x ibv.QP, addr netip.Addr, port uint16, privateData []byte, p *ibv.ConnParam) (ibv.CMConn, error) {
	q, err := d.qpOf(x)
	if err != nil {
		return nil, err
	}
	s, err := d.cmInit()
	if err != nil {
		return nil, err
	}
	c := newConn(d)
	c.qp = q
	if c.id, err = s.newID(c); err != nil {
		return nil, err
	}
	dst := netip.AddrPortFrom(addr, port)
	if err := c.dial(ctx, dst, privateData, d.params(p)); err != nil {
		c.fail()
		return nil, fmt.Errorf("passthrough: connect to %v: %w", dst, err)
	}
	c.established()
	return c, nil
}

func (c *conn) dial(ctx context.Context, dst netip.AddrPort, privateData []byte, par ibv.ConnParam) error {
	err := c.id.do(func(id *C.struct_rdma_cm_id) error {
		a := addrToC(dst)
		if r, err := C.rn_resolve_addr(id, &a, resolveTimeoutMS); r != 0 {
			return fmt.Errorf("rdma_resolve_addr: %w", cErr(err))
		}
		return nil
	})
	if err != nil {
		return err
	}
	if _, err := c.wait(ctx, C.RDMA_CM_EVENT_ADDR_RESOLVED); err != nil {
		return err
	}
	var dev string
	c.id.do(func(id *C.struct_rdma_cm_id) error {
		dev = C.GoString(C.rn_id_device(id))
		return nil
	})
	if dev != c.d.name {
		return fmt.Errorf("the route leaves through RDMA device %q, not %s: %w", dev, c.d.name, verbs.ErrInvalid)
	}
	err = c.id.do(func(id *C.struct_rdma_cm_id) error {
		if r, err := C.rdma_resolve_route(id, resolveTimeoutMS); r != 0 {
			return fmt.Errorf("rdma_resolve_route: %w", cErr(err))
		}
		return nil
	})
	if err != nil {
		return err
	}
	if _, err := c.wait(ctx, C.RDMA_CM_EVENT_ROUTE_RESOLVED); err != nil {
		return err
	}
	// As rdma_create_qp does: INIT now, with the attributes the route
	// gives.
	if err := c.initQP(C.IBV_QPS_INIT, par.Access, nil); err != nil {
		return err
	}
	if err := c.connect(c.qp.qpn, privateData, par, false); err != nil {
		return err
	}
	ev, err := c.wait(ctx, C.RDMA_CM_EVENT_CONNECT_RESPONSE, C.RDMA_CM_EVENT_ESTABLISHED)
	if err != nil {
		return err
	}
	c.priv, c.remoteQPN = ev.privateData, ev.qpNum
	if ev.typ == C.RDMA_CM_EVENT_ESTABLISHED {
		// iWARP: the MPA reply came, the kernel moved the QP to RTS.
		c.qp.set.Store(uint32(verbs.QPSRTS))
		return nil
	}
	// As librdmacm does on a CONNECT_RESPONSE for a QP it owns
	// (ucma_process_conn_resp): INIT again (the CM's attributes now
	// include the negotiated access), RTR, RTS; then the RTU.
	if err := c.toRTS(par, nil, nil); err != nil {
		c.id.do(func(id *C.struct_rdma_cm_id) error {
			C.rdma_reject(id, nil, 0)
			return nil
		})
		return err
	}
	return c.id.do(func(id *C.struct_rdma_cm_id) error {
		if r, err := C.rdma_establish(id); r != 0 {
			return fmt.Errorf("rdma_establish: %w", cErr(err))
		}
		return nil
	})
}

// connect sends the request (rdma_connect) or the reply (rdma_accept)
// naming qpn.
func (c *conn) connect(qpn uint32, privateData []byte, par ibv.ConnParam, accept bool) error {
	if len(privateData) > 255 {
		return fmt.Errorf("%d bytes of private data, at most 255: %w", len(privateData), verbs.ErrInvalid)
	}
	return c.id.do(func(id *C.struct_rdma_cm_id) error {
		var p unsafe.Pointer
		if len(privateData) > 0 {
			p = C.CBytes(privateData)
			defer C.free(p)
		}
		var acc C.int
		what := "rdma_connect"
		if accept {
			acc, what = 1, "rdma_accept"
		}
		r, err := C.rn_connect(id, C.uint32_t(qpn), p, C.uint8_t(len(privateData)),
			C.uint8_t(par.ResponderResources), C.uint8_t(par.InitiatorDepth),
			C.uint8_t(par.RetryCount), C.uint8_t(par.RNRRetryCount), acc)
		if r != 0 {
			return fmt.Errorf("%s: %w", what, cErr(err))
		}
		return nil
	})
}

// toRTS moves the QP through INIT, RTR and RTS with the attributes
// rdma_init_qp_attr gives, adjusted by rtr and rts (either may be nil).
func (c *conn) toRTS(par ibv.ConnParam, rtr, rts func(*C.struct_ibv_qp_attr)) error {
	if err := c.initQP(C.IBV_QPS_INIT, par.Access, nil); err != nil {
		return err
	}
	if err := c.initQP(C.IBV_QPS_RTR, 0, rtr); err != nil {
		return err
	}
	return c.initQP(C.IBV_QPS_RTS, 0, rts)
}

// initQP moves the QP to state with rdma_init_qp_attr's attributes;
// access, if non-zero, replaces the remote access rights at INIT.
func (c *conn) initQP(state C.enum_ibv_qp_state, access verbs.Access, adjust func(*C.struct_ibv_qp_attr)) error {
	var a C.struct_ibv_qp_attr
	var mask C.int
	a.qp_state = state
	err := c.id.do(func(id *C.struct_rdma_cm_id) error {
		if r, err := C.rdma_init_qp_attr(id, &a, &mask); r != 0 {
			return fmt.Errorf("rdma_init_qp_attr(%v): %w", verbs.QPState(state), cErr(err))
		}
		return nil
	})
	if err != nil {
		return err
	}
	if state == C.IBV_QPS_INIT && access != 0 {
		a.qp_access_flags = C.uint(access)
		mask |= C.IBV_QP_ACCESS_FLAGS
	}
	if adjust != nil {
		adjust(&a)
	}
	if mask == 0 {
		return nil // iWARP: the kernel moves the QP itself
	}
	return c.qp.modifyC(&a, mask)
}

// conn is a connection from its id's creation on: its events go to the
// goroutine connecting it until it is established, then to event.
type conn struct {
	d         *device
	id        *cmID
	qp        *qp
	priv      []byte
	remoteQPN uint32
	local     netip.AddrPort
	remote    netip.AddrPort

	mu       sync.Mutex
	up       bool // established: events go to event, not to events
	local0   bool // Disconnect was called here
	downOnce sync.Once
	events   chan *cmEvent
	abortCh  chan struct{}
	abortOne sync.Once
	done     chan struct{}
}

func newConn(d *device) *conn {
	return &conn{d: d, events: make(chan *cmEvent, 16), abortCh: make(chan struct{}), done: make(chan struct{})}
}

func (c *conn) event(ev *cmEvent) {
	c.mu.Lock()
	if !c.up {
		select {
		case c.events <- ev:
		default:
		}
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	c.handle(ev)
}

// handle acts on an established connection's event.
func (c *conn) handle(ev *cmEvent) {
	switch ev.typ {
	case C.RDMA_CM_EVENT_DISCONNECTED, C.RDMA_CM_EVENT_DEVICE_REMOVAL:
		go c.down()
	}
}

func (c *conn) abort() {
	c.abortOne.Do(func() { close(c.abortCh) })
	c.downOnce.Do(func() { close(c.done) })
}

// established switches the events to handle, taking those that arrived
// meanwhile.
func (c *conn) established() {
	c.local, c.remote = c.id.addrs()
	c.mu.Lock()
	c.up = true
	var early []*cmEvent
	for {
		select {
		case ev := <-c.events:
			early = append(early, ev)
			continue
		default:
		}
		break
	}
	c.mu.Unlock()
	for _, ev := range early {
		c.handle(ev)
	}
}

// wait waits for one of the events want; another event that ends the
// attempt (an error, a reject, a disconnect) fails it.
func (c *conn) wait(ctx context.Context, want ...C.uint32_t) (*cmEvent, error) {
	for {
		select {
		case ev := <-c.events:
			for _, w := range want {
				if ev.typ == w {
					if ev.status != 0 {
						return nil, fmt.Errorf("%s with status %d", cmEventName(ev.typ), ev.status)
					}
					return ev, nil
				}
			}
			switch ev.typ {
			case C.RDMA_CM_EVENT_REJECTED:
				return nil, &RejectError{Status: ev.status, PrivateData: ev.privateData}
			case C.RDMA_CM_EVENT_ADDR_ERROR, C.RDMA_CM_EVENT_ROUTE_ERROR, C.RDMA_CM_EVENT_CONNECT_ERROR,
				C.RDMA_CM_EVENT_UNREACHABLE, C.RDMA_CM_EVENT_DISCONNECTED, C.RDMA_CM_EVENT_DEVICE_REMOVAL:
				err := error(syscall.ETIMEDOUT)
				if ev.status < 0 {
					err = syscall.Errno(-ev.status)
				}
				return nil, fmt.Errorf("%s: %w", cmEventName(ev.typ), err)
			}
		case <-c.abortCh:
			return nil, errClosed()
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// fail ends a connection attempt: the id goes away and a QP that left
// RESET goes to ERR, as rdma_cm does with its own on a reject.
func (c *conn) fail() {
	if c.qp != nil && verbs.QPState(c.qp.set.Load()) != verbs.QPSReset {
		c.qp.Modify(&verbs.QPAttr{State: verbs.QPSErr}, verbs.AttrState)
	}
	c.id.destroy()
}

// down ends an established connection: the QP to ERR, Done closed, the id
// destroyed. A disconnect the peer started is answered first (the DREP).
func (c *conn) down() {
	c.mu.Lock()
	local := c.local0
	c.mu.Unlock()
	if !local {
		c.id.do(func(id *C.struct_rdma_cm_id) error {
			C.rdma_disconnect(id)
			return nil
		})
	}
	c.qp.Modify(&verbs.QPAttr{State: verbs.QPSErr}, verbs.AttrState)
	c.downOnce.Do(func() { close(c.done) })
	c.id.destroy()
}

func (c *conn) QP() ibv.QP                 { return c.qp }
func (c *conn) PrivateData() []byte        { return c.priv }
func (c *conn) LocalAddr() netip.AddrPort  { return c.local }
func (c *conn) RemoteAddr() netip.AddrPort { return c.remote }
func (c *conn) RemoteQPN() uint32          { return c.remoteQPN }
func (c *conn) Done() <-chan struct{}      { return c.done }

// Disconnect sends the disconnect (DREQ, or the iWARP close) and waits for
// the peer's answer or ctx. On IB and RoCE the QP goes to ERR first, as
// rdma_disconnect does for a QP it owns; iw_cm drains an iWARP QP itself.
func (c *conn) Disconnect(ctx context.Context) error {
	select {
	case <-c.done:
		return nil
	default:
	}
	c.mu.Lock()
	c.local0 = true
	c.mu.Unlock()
	if !c.d.iwarp {
		c.qp.Modify(&verbs.QPAttr{State: verbs.QPSErr}, verbs.AttrState)
	}
	err := c.id.do(func(id *C.struct_rdma_cm_id) error {
		if r, err := C.rdma_disconnect(id); r != 0 && !errors.Is(err, syscall.EINVAL) {
			return fmt.Errorf("rdma_disconnect: %w", cErr(err))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("passthrough: disconnect: %w", err)
	}
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

var (
	_ ibv.ConnManager = (*device)(nil)
	_ ibv.CMListener  = (*listener)(nil)
	_ ibv.CMRequest   = (*request)(nil)
	_ ibv.CMConn      = (*conn)(nil)
	_ ibv.Network     = (*device)(nil)
	_ ibv.Counters    = (*device)(nil)
	_ ibv.Device      = (*device)(nil)
)
