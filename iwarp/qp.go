package iwarp

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/rnic/rnic/iwarp/wire"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/transport/clock"
	"github.com/rnic/rnic/transport/stream"
)

// cmState is where a QP's connection stands.
type cmState uint8

const (
	cmIdle       cmState = iota // no connection
	cmDialing                   // TCP connect under way
	cmAwaitReply                // MPA Request sent, waiting for the Reply
	cmConnected                 // full operation (FPDUs)
	cmClosing                   // our side closed (FIN queued); waiting for the peer's
	cmClosed                    // the stream ended
)

var cmNames = [...]string{"idle", "dialing", "await-reply", "connected", "closing", "closed"}

func (c cmState) String() string { return cmNames[c] }

// QP is one iWARP queue pair: an RC QP bound to one stream connection.
type QP struct {
	s *Stack
	verbs.QPCore

	destroyed bool
	wc        verbs.WC
	deferred  []func() // callbacks to run once Mu is released

	// Connection.
	cm         cmState
	conn       stream.Conn
	gen        uint64 // connection generation: stale callbacks compare it
	cancelDial func()
	active     bool
	local      netip.AddrPort
	remote     netip.AddrPort
	hs         []byte // initiator: bytes of the MPA Reply gathered so far
	mpaReq     []byte // initiator: the MPA Request sent
	onConnect  func(ConnectResult)
	mpaTimer   clock.Deadline
	closeTimer clock.Deadline
	txFraming  wire.Framing
	rxFraming  wire.Framing
	dfr        *wire.Deframer
	maxULPDU   int
	rtrWait    bool    // responder: no FPDU goes out before the RTR arrives
	rtrSend    rtrKind // initiator: the RTR to send first
	rtrRecv    rtrKind // responder: the RTR expected
	ird, ord   int     // enforced inbound / outbound RDMA Read depths
	connErr    error   // why the connection ended

	// Transmit.
	tx         []byte              // FPDUs not yet accepted by the stream
	txEnds     []int               // with records: where each FPDU of tx ends
	records    stream.RecordWriter // conn, when it keeps FPDUs whole in segments
	txOff      uint32              // stream offset of the next FPDU (markers)
	txTotal    uint64              // bytes ever appended to tx
	txAccepted uint64              // bytes ever accepted by the stream
	blocked    bool                // a Write was refused; waiting for writable
	closeAfter bool                // close the stream once tx has drained
	hdr        []byte
	payload    []byte
	scratch    [8]byte

	req  requester
	resp responder
}

type rtrKind uint8

const (
	rtrNone rtrKind = iota
	rtrWrite
	rtrRead
	rtrSend
)

// rtrPreference is the order in which a responder (and an initiator
// reading the Reply) picks an RTR kind.
var rtrPreference = [...]rtrKind{rtrWrite, rtrRead, rtrSend}

func (k rtrKind) String() string { return [...]string{"none", "write", "read", "send"}[k] }

// rtrFlag reports whether v's RTR flags include kind k.
func rtrFlag(v wire.IRDORD, k rtrKind) bool {
	switch k {
	case rtrWrite:
		return v.WriteRTR
	case rtrRead:
		return v.ReadRTR
	case rtrSend:
		return v.SendRTR
	}
	return false
}

func newQP(s *Stack, cfg *verbs.QPConfig) *QP {
	qp := &QP{s: s, QPCore: verbs.QPCore{Cfg: *cfg}}
	qp.hdr = make([]byte, 0, wire.DDPUntaggedLen+wire.AtomicRequestLen)
	clk := s.cfg.Clock
	qp.mpaTimer.Init(clk, qp.Mu.Lock, qp.unlock, qp.unlessDestroyed(qp.mpaExpired))
	qp.closeTimer.Init(clk, qp.Mu.Lock, qp.unlock, qp.unlessDestroyed(qp.closeExpired))
	qp.req.init(qp)
	qp.resp.init(qp)
	return qp
}

// Query implements verbs.Engine.
func (qp *QP) Query() verbs.QPAttr {
	qp.Mu.Lock()
	defer qp.Mu.Unlock()
	a := qp.QueryLocked()
	if qp.cm >= cmConnected {
		a.MaxRdAtomic, a.MaxDestRdAtomic = uint8(min(qp.ord, 255)), uint8(min(qp.ird, 255))
	}
	return a
}

// Modify implements verbs.Engine. The connection manager, not Modify,
// moves an iWARP QP to RTS: RTR and RTS are refused unless the QP is
// connected (RTS→RTS then only updates attributes). SQD is not supported.
func (qp *QP) Modify(cur verbs.QPState, attr *verbs.QPAttr, mask verbs.QPAttrMask) error {
	qp.Mu.Lock()
	defer qp.unlock()
	if qp.destroyed {
		return fmt.Errorf("iwarp: QP %#x destroyed", qp.Cfg.QPN)
	}
	if qp.CurState != cur {
		return fmt.Errorf("%w: is %v, not %v", ErrStateChanged, qp.CurState, cur)
	}
	next := qp.CurState
	if mask&verbs.AttrState != 0 {
		next = attr.State
	}
	switch next {
	case verbs.QPSRTR, verbs.QPSRTS:
		if qp.cm != cmConnected || cur != verbs.QPSRTS || next != verbs.QPSRTS {
			return fmt.Errorf("%w: the connection manager (Connect, Accept) moves an iWARP QP to RTS", ErrNotConnected)
		}
	case verbs.QPSSQD, verbs.QPSSQE:
		return fmt.Errorf("%w: %v on an iWARP QP", ErrUnsupported, next)
	}
	qp.Attr.Apply(attr, mask)
	if mask&verbs.AttrState == 0 {
		return nil
	}
	switch next {
	case verbs.QPSReset:
		if qp.conn != nil || qp.cm == cmDialing {
			qp.teardown(fmt.Errorf("iwarp: QP reset"), true)
		}
		qp.setState(verbs.QPSReset)
		qp.reset()
		return nil
	case verbs.QPSErr:
		// A verbs-initiated move to ERR ends the connection in order.
		if qp.conn != nil && qp.cm == cmConnected {
			qp.connErr = fmt.Errorf("iwarp: QP moved to ERR")
			qp.closeStream()
		} else if qp.cm == cmDialing || qp.cm == cmAwaitReply {
			qp.teardown(fmt.Errorf("iwarp: QP moved to ERR"), true)
		}
		qp.enterError()
		return nil
	}
	qp.setState(next)
	return nil
}

func (qp *QP) setState(next verbs.QPState) {
	if qp.CurState == next {
		return
	}
	if qp.s.tracing() {
		qp.s.tracef(qp.Cfg.QPN, "qp", "state %v -> %v", qp.CurState, next)
	}
	qp.CurState = next
}

// reset returns the QP to its freshly created condition (modify to
// RESET): queues are emptied without completions.
func (qp *QP) reset() {
	qp.req.reset()
	qp.resp.reset()
	qp.Attr = verbs.QPAttr{}
	qp.cm = cmIdle
	qp.connErr = nil
}

// RecvPosted implements verbs.Engine. Nothing waits for receive WQEs: a
// Send that finds none is a Terminate (iWARP has no RNR).
func (qp *QP) RecvPosted() {}

// Destroy implements verbs.Engine: an established connection is closed
// in order without the QP (orphan: Linux closes a destroyed QP's socket
// with a FIN, not a RST), one being set up is reset. Of the QP's callbacks
// only the EventDisconnected of the connection Destroy ended still reaches
// Config.OnConnEvent: its owner (the CM) must learn that the connection is
// over, as rdma_cm reports DISCONNECTED to an id whose QP was destroyed;
// without it a Disconnect waiting for the peer's close would wait forever.
func (qp *QP) Destroy() {
	qp.Mu.Lock()
	if qp.destroyed {
		qp.Mu.Unlock()
		return
	}
	cancel := qp.cancelDial
	qp.cancelDial, qp.onConnect = nil, nil // nothing of the attempt's is called
	qp.deferred = nil
	switch {
	case qp.conn != nil && (qp.cm == cmConnected || qp.cm == cmClosing):
		qp.orphan() // queues EventDisconnected
	case qp.conn != nil || qp.cm == cmDialing:
		qp.teardown(errQPDestroyed, true) // may queue EventDisconnected
	}
	ended := qp.deferred
	qp.deferred = nil
	qp.destroyed = true
	qp.CurState = verbs.QPSErr
	qp.mpaTimer.Stop()
	qp.closeTimer.Stop()
	qp.Mu.Unlock()
	if cancel != nil {
		cancel()
	}
	qp.s.removeQP(qp.Cfg.QPN)
	for _, f := range ended {
		f()
	}
}

// errQPDestroyed is why a connection Destroy ended, in its
// EventDisconnected.
var errQPDestroyed = errors.New("iwarp: QP destroyed")

// enterError moves the QP to ERR: every outstanding send WR completes
// (a WR marked failed with its status, the others with WR_FLUSH_ERR), then
// every receive WR of the QP's own queue with WR_FLUSH_ERR.
func (qp *QP) enterError() {
	if qp.CurState == verbs.QPSErr {
		return
	}
	qp.setState(verbs.QPSErr)
	qp.req.flush()
	qp.resp.flush()
	if qp.Cfg.UsesSRQ {
		qp.raise(verbs.EventQPLastWQEReached)
	}
}

// raise reports an asynchronous event.
func (qp *QP) raise(e verbs.AsyncEvent) {
	if qp.Cfg.Event != nil && !qp.destroyed {
		qp.Cfg.Event(e)
	}
}

// pushSend and pushRecv queue completions through a field of the QP, so
// that no WC escapes to the heap. A completion that finds its CQ full is
// lost and counted, as roce's are (roce/qp.go): the send side goes on, a
// lost receive completion ends the connection.
func (qp *QP) pushSend(wc verbs.WC) {
	if qp.destroyed {
		return
	}
	qp.wc = wc
	if !qp.Cfg.SendCQ.Push(&qp.wc) {
		qp.s.ctr.inc(CQOverflow)
	}
}

func (qp *QP) pushRecv(wc verbs.WC) {
	if qp.destroyed {
		return
	}
	qp.wc = wc
	if !qp.Cfg.RecvCQ.Push(&qp.wc) {
		qp.s.ctr.inc(CQOverflow)
		qp.fatal(fmt.Errorf("iwarp: receive CQ overrun"))
	}
}

// fatal ends the connection after a local failure: a Terminate (local
// catastrophic error) if the connection is up, then ERR.
func (qp *QP) fatal(err error) {
	if qp.CurState == verbs.QPSErr {
		return
	}
	if qp.cm == cmConnected {
		qp.sendTerminate(termInfo{code: wire.TermRDMAPLocalCatastrophic}, err)
		return
	}
	qp.enterError()
}

// later queues f to run once the QP lock is released.
func (qp *QP) later(f func()) { qp.deferred = append(qp.deferred, f) }

// unlock releases mu and runs the deferred callbacks.
func (qp *QP) unlock() {
	if len(qp.deferred) == 0 {
		qp.Mu.Unlock()
		return
	}
	fs := qp.deferred
	qp.deferred = nil
	qp.Mu.Unlock()
	for _, f := range fs {
		f()
	}
}

// unlessDestroyed wraps a timer's expiry so that it does nothing once the
// QP is destroyed.
func (qp *QP) unlessDestroyed(f func()) func() {
	return func() {
		if !qp.destroyed {
			f()
		}
	}
}
