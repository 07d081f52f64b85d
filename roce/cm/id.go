package cm

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/rnic/rnic/transport/clock"
)

// State is a connection's CM state (IBTA Vol 1 §12.9.6, Figure 160, with
// the idle and time-wait ends).
type State uint8

// CM states.
const (
	StateIdle State = iota
	StateREQSent
	StateREQRcvd
	StateMRASent // REQ received, MRA sent: the consumer still deciding
	StateMRARcvd // our REQ or REP was MRA'd: waiting longer
	StateREPSent
	StateREPRcvd
	StateEstablished
	StateDREQSent
	StateTimeWait
	StateClosed
)

func (s State) String() string {
	return [...]string{"IDLE", "REQ_SENT", "REQ_RCVD", "MRA_SENT", "MRA_RCVD", "REP_SENT", "REP_RCVD",
		"ESTABLISHED", "DREQ_SENT", "TIMEWAIT", "CLOSED", "?"}[min(int(s), 11)]
}

// EventType says what happened to a connection.
type EventType uint8

// Events.
const (
	// EventREP: the passive side accepted (active side). The handler moves
	// its QP to RTR and RTS from REP and returns nil (the RTU goes out and
	// EventEstablished follows) or an error (the REP is rejected).
	EventREP EventType = iota + 1
	// EventEstablished: the connection is up (RTU sent or received).
	EventEstablished
	// EventRejected: the peer sent a REJ (Reason, ARI, PrivateData).
	EventRejected
	// EventTimeout: the REQ or REP was never answered after every retry.
	EventTimeout
	// EventDisconnected: a DREQ arrived (answered with a DREP) or our
	// DREQ was answered or timed out: the connection is down.
	EventDisconnected
)

var eventNames = [...]string{"?", "REP", "ESTABLISHED", "REJECTED", "TIMEOUT", "DISCONNECTED"}

func (t EventType) String() string {
	if int(t) < len(eventNames) {
		return eventNames[t]
	}
	return "?"
}

// Event is delivered to an ID's handler, never with the Manager's lock
// held, in the order things happened to that ID.
type Event struct {
	Type EventType
	ID   *ID
	// REP is the peer's REP (EventREP); its PrivateData is the whole field.
	REP REP
	// Reason and ARI come with EventRejected.
	Reason RejReason
	ARI    []byte
	// PrivateData is the field of the message behind the event (RTU,
	// REJ, DREQ or DREP).
	PrivateData []byte
}

// Handler receives an ID's events; its error matters only for EventREP.
type Handler func(Event) error

// ID is one connection's CM state: a communication ID pair (ib_cm_id).
type ID struct {
	m       *Manager
	handler Handler
	passive bool

	// Guarded by m.mu.
	state             State
	localID, remoteID uint32
	remoteGUID        uint64
	peer, local       netip.Addr
	tid               uint64
	qpn, remoteQPN    uint32
	last              [MADLen]byte // the message retransmitted on timeout
	rtu               []byte       // the RTU sent, for a duplicate REP
	retries           int
	wait              time.Duration
	timer             clock.Timer
	timerGen          uint64
}

// SetHandler sets the handler (a passive ID gets it in Config.OnREQ).
func (id *ID) SetHandler(h Handler) {
	id.m.mu.Lock()
	id.handler = h
	id.m.mu.Unlock()
}

// State returns the ID's state.
func (id *ID) State() State {
	id.m.mu.Lock()
	defer id.m.mu.Unlock()
	return id.state
}

// Peer returns the peer's address and the local address the connection
// uses.
func (id *ID) Peer() (peer, local netip.Addr) { return id.peer, id.local }

// CommIDs returns the local and remote communication IDs.
func (id *ID) CommIDs() (local, remote uint32) {
	id.m.mu.Lock()
	defer id.m.mu.Unlock()
	return id.localID, id.remoteID
}

// RemoteQPN returns the peer's QPN (from its REQ or REP).
func (id *ID) RemoteQPN() uint32 {
	id.m.mu.Lock()
	defer id.m.mu.Unlock()
	return id.remoteQPN
}

// Accept answers a REQ with rep (passive side). The IDs and GUID are
// filled in; the REP is retried until the RTU (or a REJ) arrives.
func (id *ID) Accept(rep REP) error {
	m := id.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if id.state != StateREQRcvd && id.state != StateMRASent {
		return fmt.Errorf("%w: accept in %v", ErrState, id.state)
	}
	rep.LocalCommID, rep.RemoteCommID, rep.LocalCAGUID = id.localID, id.remoteID, m.cfg.GUID
	if err := rep.Encode(id.last[:], id.tid); err != nil {
		return err
	}
	id.qpn = rep.LocalQPN
	id.state = StateREPSent
	id.transmit()
	id.armTimer(id.wait)
	return nil
}

// Reject answers a REQ (passive side) or a REP (active side, before the
// RTU) with a REJ and closes the ID.
func (id *ID) Reject(reason RejReason, ari, privateData []byte) error {
	m := id.m
	m.mu.Lock()
	defer m.mu.Unlock()
	var msg uint8
	switch id.state {
	case StateREQRcvd, StateMRASent:
		msg = MsgREQ
	case StateREPRcvd:
		msg = MsgREP
	default:
		return fmt.Errorf("%w: reject in %v", ErrState, id.state)
	}
	if err := id.sendREJ(reason, msg, ari, privateData); err != nil {
		return err
	}
	id.stopTimer()
	id.state = StateClosed
	id.forget()
	return nil
}

// Disconnect sends a DREQ; EventDisconnected follows when the DREP comes
// (or the retries run out).
func (id *ID) Disconnect(privateData []byte) error {
	m := id.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if id.state != StateEstablished {
		return fmt.Errorf("%w: disconnect in %v", ErrState, id.state)
	}
	tid := m.hiTID | uint64(id.localID)
	dreq := DREQ{LocalCommID: id.localID, RemoteCommID: id.remoteID, RemoteQPN: id.remoteQPN, PrivateData: privateData}
	if err := dreq.Encode(id.last[:], tid); err != nil {
		return err
	}
	id.state = StateDREQSent
	id.retries = int(m.cfg.MaxRetries)
	id.transmit()
	id.armTimer(m.retryTimeout(m.cfg.ResponseTimeout))
	return nil
}

// Destroy forgets the ID at once, without telling the peer.
func (id *ID) Destroy() {
	id.m.mu.Lock()
	defer id.m.mu.Unlock()
	id.stopTimer()
	id.state = StateClosed
	id.forget()
}

// sendREJ sends a REJ for this ID (not stored for retransmission: a lost
// REJ is answered by the peer's retry, which meets a closed or stale ID).
// Caller holds m.mu.
func (id *ID) sendREJ(reason RejReason, msg uint8, ari, pd []byte) error {
	rej := REJ{LocalCommID: id.localID, RemoteCommID: id.remoteID, MessageRejected: msg, Reason: reason, ARI: ari, PrivateData: pd}
	var b [MADLen]byte
	if err := rej.Encode(b[:], id.tid); err != nil {
		return err
	}
	id.sendOnce(b[:])
	return nil
}

// transmit sends id.last. Caller holds m.mu.
func (id *ID) transmit() { id.m.send(id.peer, id.local, id.last[:]) }

// sendOnce sends a message that is not retried. Caller holds m.mu.
func (id *ID) sendOnce(b []byte) { id.m.send(id.peer, id.local, b) }

// armTimer (re)starts the retry timer. Caller holds m.mu. A generation
// number makes a timer that fires while being re-armed harmless.
func (id *ID) armTimer(d time.Duration) {
	id.stopTimer()
	id.timerGen++
	gen := id.timerGen
	id.timer = id.m.cfg.Clock.AfterFunc(d, func() { id.expire(gen) })
}

func (id *ID) stopTimer() {
	if id.timer != nil {
		id.timer.Stop()
		id.timer = nil
	}
	id.timerGen++
}

// expire is the retry timer: send the message again, or give up.
func (id *ID) expire(gen uint64) {
	m := id.m
	m.mu.Lock()
	if gen != id.timerGen || m.closed {
		m.mu.Unlock()
		return
	}
	id.timer = nil
	var ev pending
	switch id.state {
	case StateREQSent, StateREPSent, StateDREQSent, StateMRARcvd:
		if id.retries > 0 {
			id.retries--
			m.ctr.retx.Add(1)
			if id.state == StateMRARcvd {
				// The MRA'd message's wait is over; resume retrying it.
				if id.passive {
					id.state = StateREPSent
				} else {
					id.state = StateREQSent
				}
			}
			id.transmit()
			id.armTimer(id.wait)
			break
		}
		m.ctr.timeouts.Add(1)
		if id.state == StateDREQSent {
			id.enterTimeWait()
			ev = pending{id: id, ev: Event{Type: EventDisconnected, ID: id}}
			break
		}
		// §12.9.8.1: a REQ or REP that was never answered ends with a
		// REJ (timeout) carrying our CA GUID as the ARI.
		msg := uint8(MsgREQ)
		if id.passive {
			msg = MsgREP
		}
		var ari [8]byte
		for i := range ari {
			ari[i] = byte(m.cfg.GUID >> (56 - 8*i))
		}
		id.sendREJ(RejTimeout, msg, ari[:], nil)
		id.state = StateClosed
		id.forget()
		ev = pending{id: id, ev: Event{Type: EventTimeout, ID: id}}
	case StateTimeWait:
		id.state = StateClosed
		id.forget()
	}
	m.mu.Unlock()
	ev.dispatch()
}

// enterTimeWait keeps the ID to answer duplicates for TimeWait, then drops
// it. Caller holds m.mu.
func (id *ID) enterTimeWait() {
	id.state = StateTimeWait
	id.armTimer(id.m.cfg.TimeWait)
}

// forget removes the ID from the tables. Caller holds m.mu.
func (id *ID) forget() {
	m := id.m
	if m.ids[id.localID] == id {
		delete(m.ids, id.localID)
	}
	k := remoteKey{id.remoteID, id.remoteGUID}
	if m.byRemote[k] == id {
		delete(m.byRemote, k)
	}
}

// dropHandlerIfDone lets go of the handler of an ID that will deliver no
// more events: one in TimeWait only answers duplicates until it is
// forgotten, and its handler holds the application's connection (QP,
// buffers) for those seconds otherwise.
func (id *ID) dropHandlerIfDone() {
	id.m.mu.Lock()
	if id.state == StateTimeWait || id.state == StateClosed {
		id.handler = nil
	}
	id.m.mu.Unlock()
}

// pending is an event to deliver once the lock is released.
type pending struct {
	id  *ID
	ev  Event
	rep bool // EventREP: the handler's answer decides RTU or REJ
}

func (p pending) dispatch() {
	id := p.id
	if id == nil {
		return
	}
	m := id.m
	m.mu.Lock()
	h := id.handler
	m.mu.Unlock()
	var err error
	if h != nil {
		err = h(p.ev)
	}
	if !p.rep {
		id.dropHandlerIfDone()
		return
	}
	if errors.Is(err, ErrDeferRTU) {
		return // Establish sends it
	}
	if err != nil {
		id.Reject(RejConsumerReject, nil, nil)
		return
	}
	m.mu.Lock()
	if id.state != StateREPRcvd || !id.sendRTU() {
		m.mu.Unlock()
		return
	}
	m.mu.Unlock()
	if h != nil {
		h(Event{Type: EventEstablished, ID: id})
	}
}

// sendRTU answers the REP with an RTU (kept for a duplicate REP) and
// enters ESTABLISHED; false if it could not be encoded. Caller holds
// m.mu, the ID in REP_RCVD.
func (id *ID) sendRTU() bool {
	rtu := RTU{LocalCommID: id.localID, RemoteCommID: id.remoteID}
	b := make([]byte, MADLen)
	if rtu.Encode(b, id.tid) != nil {
		return false
	}
	id.rtu = b
	id.sendOnce(b)
	id.state = StateEstablished
	return true
}
