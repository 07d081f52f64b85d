package cm

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rnic/rnic/roce"
	"github.com/rnic/rnic/transport/clock"
)

// Port sends MADs from the local QP1: roce.Stack implements it.
type Port interface {
	SendGSI(*roce.GSISend) error
}

// Config configures a Manager.
type Config struct {
	Port  Port
	Clock clock.Clock
	// GUID is the local CA GUID (the node GUID) REQs and REPs carry.
	GUID uint64
	// ResponseTimeout is the CM response timeout code (4.096 µs × 2^code)
	// this CM announces and waits for: 20 (4.3 s) if zero, rdma_cm's
	// CMA_CM_RESPONSE_TIMEOUT.
	ResponseTimeout uint8
	// PacketLifeTime is the path's packet life time code: 18 if zero
	// (rdma_cm over RoCE). Each retry waits 2 × packet life + the peer's
	// response timeout, as ib_cm does.
	PacketLifeTime uint8
	// MaxRetries is how often a REQ, REP or DREQ is sent again when its
	// answer does not come (15 if zero, rdma_cm's CMA_MAX_CM_RETRIES).
	MaxRetries uint8
	// TimeWait is how long a closed connection's IDs linger to answer
	// duplicates (one retry timeout if zero).
	TimeWait time.Duration
	// OnREQ is offered every new REQ (the IDs of rdma_cm's listeners are
	// found by service ID here). It runs on the CM's goroutine, must not
	// block, and either keeps id (setting its handler, answering later
	// with Accept or Reject) or returns false: the REQ is then rejected
	// with "invalid service ID". req's PrivateData is only valid during
	// the call.
	OnREQ func(id *ID, req *REQ) bool
	// OnSIDR is offered every new SIDR_REQ, as OnREQ every REQ: it keeps
	// r (answering later with r.Reply) or returns false, and the request
	// is answered "service ID not supported". req's PrivateData is only
	// valid during the call.
	OnSIDR func(r *SIDRRequest, req *SIDRREQ) bool
}

// Counters are a Manager's counters (a snapshot).
type Counters struct {
	RcvdMADs      uint64 // CM MADs received and parsed
	DroppedMADs   uint64 // not CM MADs, unknown attributes, queue full
	UnknownComm   uint64 // messages for no known communication ID
	DuplicateREQs uint64 // REQs for a connection already known
	Retransmits   uint64 // REQ/REP/DREQ/RTU/DREP sent again
	Timeouts      uint64 // retries exhausted
	SendErrors    uint64 // the port refused a MAD
}

type counters struct {
	rcvd, dropped, unknown, dupREQ, retx, timeouts, sendErr atomic.Uint64
}

// Manager is one port's communication manager.
type Manager struct {
	cfg   Config
	hiTID uint64
	ctr   counters

	mu       sync.Mutex
	ids      map[uint32]*ID           // by local communication ID
	byRemote map[remoteKey]*ID        // by the peer's communication ID and CA GUID
	sidrOut  map[uint32]*SIDRQuery    // our SIDR_REQs by Request ID
	sidrIn   map[sidrKey]*SIDRRequest // peers' SIDR_REQs, until TimeWait after the answer
	closed   bool

	queue chan *inbound
	pool  sync.Pool
	done  chan struct{}
	wg    sync.WaitGroup
}

type remoteKey struct {
	commID uint32
	guid   uint64
}

// inbound is a MAD copied off the receive path for the CM's goroutine.
type inbound struct {
	src, dst netip.Addr
	mad      [MADLen]byte
	n        int
}

// ErrClosed is returned once the Manager is closed.
var ErrClosed = errors.New("cm: closed")

// ErrState is wrapped when a call does not fit the connection's state.
var ErrState = errors.New("cm: wrong state")

// New creates a Manager. Feed it with Deliver (synchronously, e.g. from a
// virtual clock) or attach Handler to the port's QP1 after Start.
func New(cfg Config) (*Manager, error) {
	if cfg.Port == nil || cfg.Clock == nil {
		return nil, fmt.Errorf("cm: a Manager needs a Port and a Clock")
	}
	if cfg.ResponseTimeout == 0 {
		cfg.ResponseTimeout = 20
	}
	if cfg.PacketLifeTime == 0 {
		cfg.PacketLifeTime = 18
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = 15
	}
	cfg.ResponseTimeout = min(cfg.ResponseTimeout, 31)
	cfg.PacketLifeTime = min(cfg.PacketLifeTime, 31)
	cfg.MaxRetries = min(cfg.MaxRetries, 15)
	m := &Manager{cfg: cfg, hiTID: uint64(rand.Uint32()) << 32,
		ids: make(map[uint32]*ID), byRemote: make(map[remoteKey]*ID),
		sidrOut: make(map[uint32]*SIDRQuery), sidrIn: make(map[sidrKey]*SIDRRequest),
		queue: make(chan *inbound, 64), done: make(chan struct{})}
	m.pool.New = func() any { return new(inbound) }
	if m.cfg.TimeWait == 0 {
		m.cfg.TimeWait = m.retryTimeout(cfg.ResponseTimeout)
	}
	return m, nil
}

// Start runs the goroutine that processes what Handler queues.
func (m *Manager) Start() {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		for {
			select {
			case <-m.done:
				return
			case in := <-m.queue:
				m.Deliver(in.src, in.dst, in.mad[:in.n])
				m.pool.Put(in)
			}
		}
	}()
}

// Handler is the port's QP1 handler (roce.Stack.SetGSIHandler): it copies
// each CM MAD into the queue Start's goroutine works off, so that the CM
// never sends (and so never waits for address resolution) on the link's
// receive path.
func (m *Manager) Handler() roce.GSIHandler {
	return func(d *roce.GSIDatagram) {
		if len(d.MAD) < MADLen || d.MAD[1] != MgmtClassCM {
			m.ctr.dropped.Add(1)
			return
		}
		in := m.pool.Get().(*inbound)
		in.src, in.dst = d.Src, d.Dst
		in.n = copy(in.mad[:], d.MAD)
		select {
		case m.queue <- in:
		default:
			m.ctr.dropped.Add(1) // the peer retries
			m.pool.Put(in)
		}
	}
}

// Close stops the goroutine and every timer; IDs stop answering.
func (m *Manager) Close() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	for _, id := range m.ids {
		id.stopTimer()
	}
	for _, q := range m.sidrOut {
		q.finish()
	}
	m.mu.Unlock()
	close(m.done)
	m.wg.Wait()
}

// Counters returns a snapshot of the counters.
func (m *Manager) Counters() Counters {
	c := &m.ctr
	return Counters{c.rcvd.Load(), c.dropped.Load(), c.unknown.Load(), c.dupREQ.Load(),
		c.retx.Load(), c.timeouts.Load(), c.sendErr.Load()}
}

// timeoutOf converts a CM timeout code to a duration: 4.096 µs × 2^code.
func timeoutOf(code uint8) time.Duration {
	return time.Duration(4096<<min(code, 31)) * time.Nanosecond
}

// retryTimeout is how long to wait for an answer from a peer that
// announced response timeout code peer: the round trip (2 × packet life)
// plus the peer's processing time (ib_cm: cm_convert_to_ms(packet life) × 2
// + cm_convert_to_ms(response timeout)).
func (m *Manager) retryTimeout(peer uint8) time.Duration {
	return 2*timeoutOf(m.cfg.PacketLifeTime) + timeoutOf(peer)
}

// newLocalID draws an unused, nonzero communication ID. Caller holds mu.
func (m *Manager) newLocalID() uint32 {
	for {
		v := rand.Uint32()
		if _, used := m.ids[v]; v != 0 && !used {
			return v
		}
	}
}

// Connect sends a REQ to dst (from src, or the port's address of dst's
// family if src is invalid) and returns the active side's ID. The REQ's
// IDs, GUID, timeouts and retry count are filled in here; h receives the
// ID's events (EventREP first: return nil to have the RTU sent and the
// connection established, an error to reject the REP).
func (m *Manager) Connect(dst, src netip.Addr, req REQ, h Handler) (*ID, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	id := &ID{m: m, peer: dst.Unmap(), local: src.Unmap(), handler: h, qpn: req.LocalQPN}
	id.localID = m.newLocalID()
	id.tid = m.hiTID | uint64(id.localID)
	req.LocalCommID = id.localID
	req.LocalCAGUID = m.cfg.GUID
	req.RemoteCMResponseTimeout = m.cfg.ResponseTimeout
	req.LocalCMResponseTimeout = m.cfg.ResponseTimeout
	req.MaxCMRetries = m.cfg.MaxRetries
	if err := req.Encode(id.last[:], id.tid); err != nil {
		return nil, err
	}
	m.ids[id.localID] = id
	id.state = StateREQSent
	id.retries = int(m.cfg.MaxRetries)
	id.wait = m.retryTimeout(m.cfg.ResponseTimeout)
	id.transmit()
	id.armTimer(id.wait)
	return id, nil
}

// Deliver processes one MAD from src (to the local address dst). It
// allocates nothing for a MAD it drops.
func (m *Manager) Deliver(src, dst netip.Addr, b []byte) {
	mad, err := ParseMAD(b)
	if err != nil {
		m.ctr.dropped.Add(1)
		return
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.ctr.rcvd.Add(1)
	var ev pending
	switch mad.AttrID() {
	case AttrREQ:
		m.mu.Unlock()
		m.onREQ(src.Unmap(), dst.Unmap(), mad)
		return
	case AttrREP:
		ev = m.onREP(mad)
	case AttrRTU:
		ev = m.onRTU(mad)
	case AttrREJ:
		ev = m.onREJ(mad)
	case AttrMRA:
		m.onMRA(mad)
	case AttrDREQ:
		ev = m.onDREQ(src.Unmap(), dst.Unmap(), mad)
	case AttrDREP:
		ev = m.onDREP(mad)
	case AttrSIDRREQ:
		m.mu.Unlock()
		m.onSIDRREQ(src.Unmap(), dst.Unmap(), mad)
		return
	case AttrSIDRREP:
		if done := m.onSIDRREP(src.Unmap(), mad); done != nil {
			m.mu.Unlock()
			done()
			return
		}
	default:
		m.ctr.dropped.Add(1) // LAP/APR: not supported; the peer times out
	}
	m.mu.Unlock()
	ev.dispatch()
}

// byLocal finds the ID a message for our communication ID (its Remote
// Communication ID field) is for. Caller holds mu.
func (m *Manager) byLocal(commID uint32) *ID {
	id := m.ids[commID]
	if id == nil {
		m.ctr.unknown.Add(1)
	}
	return id
}

func (m *Manager) onREQ(src, dst netip.Addr, mad MAD) {
	var req REQ
	req.Decode(mad)
	key := remoteKey{req.LocalCommID, req.LocalCAGUID}
	m.mu.Lock()
	if id := m.byRemote[key]; id != nil {
		// A duplicate REQ (§12.9.5.1): ours was lost or is slow. If the
		// consumer has not answered yet, say so with an MRA (and resend
		// it for every further duplicate); if we answered, resend the REP;
		// a REQ for a connection in TimeWait is stale.
		m.ctr.dupREQ.Add(1)
		switch id.state {
		case StateREQRcvd, StateMRASent:
			mra := MRA{LocalCommID: id.localID, RemoteCommID: id.remoteID, MessageMRAed: MsgREQ,
				ServiceTimeout: min(m.cfg.ResponseTimeout+4, 31)} // 16 × our response time
			var b [MADLen]byte
			if mra.Encode(b[:], id.tid) == nil {
				id.state = StateMRASent
				id.sendOnce(b[:])
			}
		case StateREPSent:
			m.ctr.retx.Add(1)
			id.transmit()
		case StateTimeWait:
			id.sendREJ(RejStaleConn, MsgREQ, nil, nil)
		}
		m.mu.Unlock()
		return
	}
	if m.closed {
		m.mu.Unlock()
		return
	}
	id := &ID{m: m, peer: src, local: dst, remoteID: req.LocalCommID, remoteGUID: req.LocalCAGUID,
		tid: mad.TID(), remoteQPN: req.LocalQPN, state: StateREQRcvd, passive: true}
	id.localID = m.newLocalID()
	// Our REP waits for the RTU as long as the active side says it takes
	// to answer, and is retried as often as it allows.
	id.wait = m.retryTimeout(req.LocalCMResponseTimeout)
	id.retries = int(req.MaxCMRetries)
	m.ids[id.localID] = id
	m.byRemote[key] = id
	onREQ := m.cfg.OnREQ
	m.mu.Unlock()
	if onREQ == nil || !onREQ(id, &req) {
		id.Reject(RejInvalidServiceID, nil, nil)
	}
}

func (m *Manager) onREP(mad MAD) pending {
	var rep REP
	rep.Decode(mad)
	id := m.byLocal(rep.RemoteCommID)
	if id == nil {
		return pending{}
	}
	switch id.state {
	case StateREQSent, StateMRARcvd:
		id.stopTimer()
		id.remoteID, id.remoteGUID, id.remoteQPN = rep.LocalCommID, rep.LocalCAGUID, rep.LocalQPN
		m.byRemote[remoteKey{id.remoteID, id.remoteGUID}] = id
		id.state = StateREPRcvd
		ev := Event{Type: EventREP, ID: id, REP: rep}
		ev.REP.PrivateData = append([]byte(nil), rep.PrivateData...)
		return pending{id: id, ev: ev, rep: true}
	case StateEstablished:
		// Our RTU was lost (§12.9.5.2): send it again.
		if id.rtu != nil {
			m.ctr.retx.Add(1)
			id.sendOnce(id.rtu)
		}
	}
	return pending{}
}

func (m *Manager) onRTU(mad MAD) pending {
	var rtu RTU
	rtu.Decode(mad)
	id := m.byLocal(rtu.RemoteCommID)
	if id == nil || (id.state != StateREPSent && id.state != StateMRARcvd) || !id.passive {
		return pending{}
	}
	id.stopTimer()
	id.state = StateEstablished
	return pending{id: id, ev: Event{Type: EventEstablished, ID: id, PrivateData: append([]byte(nil), rtu.PrivateData...)}}
}

func (m *Manager) onREJ(mad MAD) pending {
	var rej REJ
	rej.Decode(mad)
	id := m.byLocal(rej.RemoteCommID)
	if id == nil && rej.Reason == RejTimeout {
		// A REJ (timeout) for a REQ carries no Remote Communication ID
		// when the REQ never got an ID: match it by the TID.
		for _, c := range m.ids {
			if c.tid == mad.TID() && c.state == StateREQSent {
				id = c
			}
		}
	}
	if id == nil {
		return pending{}
	}
	switch id.state {
	case StateREQSent, StateMRARcvd, StateREPSent, StateREPRcvd, StateREQRcvd, StateMRASent, StateEstablished:
		id.stopTimer()
		id.state = StateClosed
		id.forget()
		return pending{id: id, ev: Event{Type: EventRejected, ID: id, Reason: rej.Reason,
			ARI: append([]byte(nil), rej.ARI...), PrivateData: append([]byte(nil), rej.PrivateData...)}}
	}
	return pending{}
}

func (m *Manager) onMRA(mad MAD) {
	var mra MRA
	mra.Decode(mad)
	id := m.byLocal(mra.RemoteCommID)
	if id == nil {
		return
	}
	switch {
	case id.state == StateREQSent && mra.MessageMRAed == MsgREQ,
		id.state == StateREPSent && mra.MessageMRAed == MsgREP:
		// The peer needs longer (§12.9.4.2): wait its service timeout
		// instead, without counting a retry.
		id.state = StateMRARcvd
		id.armTimer(2*timeoutOf(m.cfg.PacketLifeTime) + timeoutOf(mra.ServiceTimeout))
	case id.state == StateMRARcvd:
		id.armTimer(2*timeoutOf(m.cfg.PacketLifeTime) + timeoutOf(mra.ServiceTimeout))
	}
}

func (m *Manager) onDREQ(src, dst netip.Addr, mad MAD) pending {
	var dreq DREQ
	dreq.Decode(mad)
	id := m.ids[dreq.RemoteCommID]
	if id == nil || id.remoteID != dreq.LocalCommID {
		// No such connection (any more): answer anyway so the peer can
		// finish (§12.9.7; ib_cm's cm_issue_drep).
		m.ctr.unknown.Add(1)
		drep := DREP{LocalCommID: dreq.RemoteCommID, RemoteCommID: dreq.LocalCommID}
		var b [MADLen]byte
		if drep.Encode(b[:], mad.TID()) == nil {
			m.send(src, dst, b[:])
		}
		return pending{}
	}
	if dreq.RemoteQPN != id.qpn && id.qpn != 0 {
		// A DREQ whose Remote QPN is not this connection's QP is not for
		// it: dropped, as ib_cm's cm_dreq_handler does.
		m.ctr.dropped.Add(1)
		return pending{}
	}
	switch id.state {
	case StateEstablished, StateDREQSent, StateREPSent, StateMRARcvd:
		id.stopTimer()
		drep := DREP{LocalCommID: id.localID, RemoteCommID: id.remoteID}
		if drep.Encode(id.last[:], mad.TID()) == nil {
			id.transmit()
		}
		id.enterTimeWait()
		return pending{id: id, ev: Event{Type: EventDisconnected, ID: id, PrivateData: append([]byte(nil), dreq.PrivateData...)}}
	case StateTimeWait:
		m.ctr.retx.Add(1)
		id.transmit() // the DREP was lost: id.last still holds it
	}
	return pending{}
}

func (m *Manager) onDREP(mad MAD) pending {
	var drep DREP
	drep.Decode(mad)
	id := m.byLocal(drep.RemoteCommID)
	if id == nil || id.state != StateDREQSent {
		return pending{}
	}
	id.stopTimer()
	id.enterTimeWait()
	return pending{id: id, ev: Event{Type: EventDisconnected, ID: id, PrivateData: append([]byte(nil), drep.PrivateData...)}}
}

// send hands a MAD to the port.
func (m *Manager) send(dst, src netip.Addr, b []byte) {
	if err := m.cfg.Port.SendGSI(&roce.GSISend{Dst: dst, Src: src, DestQP: roce.GSIQPN, MAD: b}); err != nil {
		m.ctr.sendErr.Add(1)
	}
}
