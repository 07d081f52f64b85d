package iwarp

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"sync"

	"github.com/rnic/rnic/iwarp/wire"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/transport/clock"
	"github.com/rnic/rnic/transport/stream"
)

// The connection manager: TCP connection, MPA Request/Reply exchange
// (RFC 5044 §7.1, RFC 6581 §9) and the RTR, then hand-over to the QP.

// ConnEventType says what happened to a QP's connection.
type ConnEventType uint8

// Connection events.
const (
	// EventEstablished: full operation. The initiator gets it with the
	// MPA Reply; the responder when the RTR arrives (at once when no RTR
	// was negotiated).
	EventEstablished ConnEventType = iota
	// EventDisconnected: the connection ended; ConnEvent.Err says why
	// (nil after a local Disconnect, io.EOF when the peer closed, a
	// *TerminateError, a stream error).
	EventDisconnected
)

func (t ConnEventType) String() string {
	if t == EventEstablished {
		return "ESTABLISHED"
	}
	return "DISCONNECTED"
}

// ConnEvent reports a change of a QP's connection (Config.OnConnEvent).
type ConnEvent struct {
	Type          ConnEventType
	QPN           uint32
	Local, Remote netip.AddrPort
	Err           error
}

// ConnectResult is the outcome of Connect.
type ConnectResult struct {
	QPN uint32
	// Err is nil when the connection is established (the QP is in RTS). It
	// wraps ErrRejected (PrivateData then holds the reject's private data),
	// ErrMPATimeout, ErrMPAInvalid, or the stream's error (stream.ErrRefused,
	// stream.ErrTimeout, ...).
	Err           error
	Local, Remote netip.AddrPort
	// The responder's MPA Reply.
	PrivateData []byte
	Rev         uint8
	HasIRDORD   bool
	IRD, ORD    uint16 // the responder's (when HasIRDORD)
	CRC         bool   // CRCs are in use
	Markers     bool   // we send markers (the responder asked)
	RTR         string // "write", "read", "send" or "none"
}

// TerminateError is the reason a connection ended with a Terminate.
type TerminateError struct {
	Code wire.TermCode
	Sent bool // we sent it (else the peer did)
}

func (e *TerminateError) Error() string {
	dir := "received"
	if e.Sent {
		dir = "sent"
	}
	return fmt.Sprintf("iwarp: Terminate %s: %v (%#04x)", dir, e.Code, uint16(e.Code))
}

// ourCRC reports whether we ask for CRCs.
func (s *Stack) ourCRC() bool { return !s.cfg.NoCRC }

// Listener accepts iWARP connections on one address.
type Listener struct {
	s         *Stack
	l         stream.Listener
	onRequest func(*ConnRequest)
}

// Listen starts accepting connections on addr (port 0: any free port).
// onRequest is called with each valid MPA Request, without engine locks
// held; it must not block, and may answer (Accept or Reject) at once or
// later from any goroutine. Requests that are invalid or that the stack's
// policy refuses (CRC strictness, no usable RTR) are answered with a
// reject and never reach onRequest.
func (s *Stack) Listen(addr netip.AddrPort, onRequest func(*ConnRequest)) (*Listener, error) {
	if onRequest == nil {
		return nil, fmt.Errorf("iwarp: Listen needs a request handler")
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil, ErrStackClosed
	}
	sl, err := s.cfg.Network.Listen(addr)
	if err != nil {
		return nil, fmt.Errorf("iwarp: listen on %v: %w", addr, err)
	}
	l := &Listener{s: s, l: sl, onRequest: onRequest}
	s.mu.Lock()
	s.listeners[l] = struct{}{}
	s.mu.Unlock()
	sl.SetAcceptor(l.accepted)
	if s.tracing() {
		s.tracef(0, "cm", "listening on %v", sl.Addr())
	}
	return l, nil
}

// Addr is the address listened on.
func (l *Listener) Addr() netip.AddrPort { return l.l.Addr() }

// Close stops listening; connections already accepted are not affected.
func (l *Listener) Close() error {
	l.s.mu.Lock()
	delete(l.s.listeners, l)
	l.s.mu.Unlock()
	return l.l.Close()
}

// cep is a passive connection before it is bound to a QP: it gathers the
// MPA Request and waits for Accept or Reject.
type cep struct {
	s     *Stack
	l     *Listener
	mu    sync.Mutex
	conn  stream.Conn
	buf   []byte // bytes received so far
	reqN  int    // size of the MPA Request at the start of buf, once parsed
	req   wire.MPAFrame
	rtr   rtrKind // the RTR we will choose
	state cepState
	qp    *QP
	gen   uint64
	timer clock.Timer
}

type cepState uint8

const (
	cepWaitRequest cepState = iota
	cepWaitAnswer
	cepBound
	cepDead
)

// maxEarlyBytes bounds what a passive connection buffers before Accept:
// the Request and, at most, a peer's FPDUs sent too early.
const maxEarlyBytes = 64 << 10

func (l *Listener) accepted(c stream.Conn) {
	s := l.s
	if s.cfg.Tee != nil {
		c = s.cfg.Tee(c)
	}
	e := &cep{s: s, l: l, conn: c}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		c.Abort()
		return
	}
	s.pending[e] = struct{}{}
	s.mu.Unlock()
	e.mu.Lock()
	c.SetReceiver(e.onData, e.onClose)
	e.timer = s.cfg.Clock.AfterFunc(s.cfg.AcceptTimeout, e.expired)
	e.mu.Unlock()
	if s.tracing() {
		s.tracef(0, "cm", "accepted TCP connection from %v", c.RemoteAddr())
	}
}

func (e *cep) expired() {
	e.mu.Lock()
	if e.state != cepWaitRequest {
		e.mu.Unlock()
		return
	}
	e.mu.Unlock()
	e.s.ctr.inc(MPATimeouts)
	if e.s.tracing() {
		e.s.tracef(0, "cm", "no MPA Request from %v within %v: abort", e.conn.RemoteAddr(), e.s.cfg.AcceptTimeout)
	}
	e.abort(ErrMPATimeout)
}

// abort resets a connection that is not bound to a QP.
func (e *cep) abort(error) {
	e.mu.Lock()
	if e.state == cepBound || e.state == cepDead {
		e.mu.Unlock()
		return
	}
	e.state = cepDead
	if e.timer != nil {
		e.timer.Stop()
	}
	e.conn.Abort()
	e.mu.Unlock()
	e.forget()
}

func (e *cep) forget() {
	e.s.mu.Lock()
	delete(e.s.pending, e)
	e.s.mu.Unlock()
}

func (e *cep) onData(p []byte) {
	e.mu.Lock()
	switch e.state {
	case cepBound:
		qp, gen := e.qp, e.gen
		e.mu.Unlock()
		qp.Mu.Lock()
		if qp.gen == gen && qp.conn != nil {
			qp.input(p)
		}
		qp.unlock()
		return
	case cepDead:
		e.mu.Unlock()
		return
	}
	if len(e.buf)+len(p) > maxEarlyBytes {
		e.mu.Unlock()
		e.s.ctr.inc(MPAInvalid)
		e.abort(ErrMPAInvalid)
		return
	}
	e.buf = append(e.buf, p...)
	if e.state != cepWaitRequest {
		e.mu.Unlock()
		return
	}
	f, n, err := wire.ParseMPAFrame(e.buf)
	if err == wire.ErrIncomplete {
		e.mu.Unlock()
		return
	}
	s := e.s
	if err != nil || f.IsReply() || f.Reject() {
		e.mu.Unlock()
		s.ctr.inc(MPAInvalid)
		if we, ok := err.(wire.Error); ok {
			s.ctr.incWire(we)
		}
		if s.tracing() {
			s.tracef(0, "cm", "invalid MPA Request from %v (%v): abort", e.conn.RemoteAddr(), err)
		}
		e.abort(ErrMPAInvalid)
		return
	}
	e.timer.Stop()
	e.req, e.reqN = f, n
	if why := e.refuse(f); why != "" {
		if s.tracing() {
			s.tracef(0, "cm", "MPA Request from %v refused: %s", e.conn.RemoteAddr(), why)
		}
		e.rejectLocked(nil)
		e.mu.Unlock()
		return
	}
	e.state = cepWaitAnswer
	r := &ConnRequest{
		Local: e.conn.LocalAddr(), Remote: e.conn.RemoteAddr(),
		PrivateData: append([]byte(nil), f.ULPPrivateData()...),
		Rev:         f.Rev(), HasIRDORD: f.HasIRDORD(), CRC: f.CRC(), Markers: f.Markers(),
		c: e,
	}
	if f.HasIRDORD() {
		v := f.IRDORD()
		r.IRD, r.ORD, r.PeerToPeer = v.IRD, v.ORD, v.PeerToPeer
	}
	e.mu.Unlock()
	if s.tracing() {
		s.tracef(0, "cm", "MPA Request from %v: rev %d crc=%v markers=%v ird=%d ord=%d p2p=%v pd=%dB",
			r.Remote, r.Rev, r.CRC, r.Markers, r.IRD, r.ORD, r.PeerToPeer, len(r.PrivateData))
	}
	e.l.onRequest(r)
}

// refuse applies the stack's policy to a Request; it returns why it is
// refused, or "" (and sets e.rtr).
func (e *cep) refuse(f wire.MPAFrame) string {
	s := e.s
	if f.Rev() < wire.MPARev1 || f.Rev() > wire.MPARev2 {
		s.ctr.inc(MPAInvalid)
		return fmt.Sprintf("MPA revision %d", f.Rev())
	}
	if s.cfg.StrictCRC && f.CRC() != s.ourCRC() {
		s.ctr.inc(StrictCRCRejects)
		return fmt.Sprintf("CRC strictness: peer C=%v, ours %v", f.CRC(), s.ourCRC())
	}
	e.rtr = rtrNone
	if f.HasIRDORD() && f.IRDORD().PeerToPeer {
		v := f.IRDORD()
		for _, k := range rtrPreference {
			if rtrFlag(v, k) && s.cfg.RTR.accepts(k) {
				e.rtr = k
				break
			}
		}
		if e.rtr == rtrNone {
			s.ctr.inc(NoMatchingRTR)
			return "no matching RTR"
		}
	}
	return ""
}

func (e *cep) onClose(err error) {
	e.mu.Lock()
	switch e.state {
	case cepBound:
		qp, gen := e.qp, e.gen
		e.mu.Unlock()
		qp.Mu.Lock()
		if qp.gen == gen {
			qp.streamClosed(err)
		}
		qp.unlock()
		return
	case cepDead:
		e.mu.Unlock()
		return
	}
	e.state = cepDead
	if e.timer != nil {
		e.timer.Stop()
	}
	e.mu.Unlock()
	e.forget()
	if e.s.tracing() {
		e.s.tracef(0, "cm", "connection from %v ended before Accept: %v", e.conn.RemoteAddr(), err)
	}
}

// ConnRequest is a peer's MPA Request, waiting for Accept or Reject.
type ConnRequest struct {
	Local, Remote netip.AddrPort
	// PrivateData is the ULP's private data (after the IRD/ORD words).
	PrivateData []byte
	Rev         uint8
	HasIRDORD   bool   // Rev 2 with S: IRD, ORD and PeerToPeer are valid
	IRD, ORD    uint16 // the initiator's
	PeerToPeer  bool   // the initiator asked for an RTR
	CRC         bool   // the initiator asked for CRCs
	Markers     bool   // the initiator asked for markers

	c *cep
}

// ErrAnswered: Accept or Reject on a request already answered, or whose
// connection has gone.
var ErrAnswered = errors.New("iwarp: connection request already answered or gone")

// Accept accepts the connection on QP qpn, which must be in INIT and not
// connected, sending the MPA Reply with privateData and our IRD (inbound
// RDMA Reads we serve at once) and ORD (RDMA Reads we issue at once; it is
// lowered to the initiator's IRD). The QP moves to RTS; with an RTR
// negotiated, its sends wait for the RTR.
func (r *ConnRequest) Accept(qpn uint32, privateData []byte, ird, ord uint16) error {
	e := r.c
	s := e.s
	if len(privateData) > MaxPrivateData || ird > MaxIRDORD || ord > MaxIRDORD {
		return fmt.Errorf("iwarp: Accept: private data %d bytes (max %d), IRD %d, ORD %d (max %d)",
			len(privateData), MaxPrivateData, ird, ord, MaxIRDORD)
	}
	qp := s.lookup(qpn)
	if qp == nil {
		return fmt.Errorf("iwarp: Accept: no QP %#x", qpn)
	}
	e.mu.Lock()
	if e.state != cepWaitAnswer {
		e.mu.Unlock()
		return ErrAnswered
	}
	qp.Mu.Lock()
	// The QP's deferred callbacks (the Established event) run after both
	// locks are released.
	defer func() { e.mu.Unlock(); qp.unlock() }()
	if err := qp.canConnect(); err != nil {
		return err
	}
	req := e.req
	rev := min(req.Rev(), s.cfg.MPARev)
	rep := wire.MPAFields{
		Reply: true, CRC: s.ourCRC() || req.CRC(), Markers: s.cfg.Markers,
		Rev: rev, Enhanced: rev >= wire.MPARev2 && req.Enhanced(), PrivateData: privateData,
	}
	if !rep.Enhanced {
		e.rtr = rtrNone // a Rev 1 Reply cannot carry the RTR choice
	}
	if rep.Enhanced {
		rep.IRDORD = wire.IRDORD{IRD: ird, ORD: ord, PeerToPeer: e.rtr != rtrNone,
			WriteRTR: e.rtr == rtrWrite, ReadRTR: e.rtr == rtrRead, SendRTR: e.rtr == rtrSend}
	}
	b, err := wire.AppendMPAFrame(nil, &rep)
	if err != nil {
		return err
	}
	if _, err := e.conn.Write(b); err != nil {
		return fmt.Errorf("iwarp: Accept: sending the MPA Reply: %w", err)
	}
	s.ctr.inc(MPAReplies)
	i2r, r2i := wire.Negotiate(req, wire.MPAFrame(b))
	qp.gen++
	qp.conn, qp.active = e.conn, false
	qp.local, qp.remote = e.conn.LocalAddr(), e.conn.RemoteAddr()
	qp.ird, qp.ord = int(ird), int(ord)
	if req.HasIRDORD() && rep.Enhanced {
		qp.ord = min(qp.ord, int(req.IRDORD().IRD))
	}
	qp.rtrRecv, qp.rtrWait = e.rtr, e.rtr != rtrNone
	qp.establish(r2i, i2r)
	e.state, e.qp, e.gen = cepBound, qp, qp.gen
	qp.conn.SetWritable(qp.writableFunc(qp.gen))
	if s.tracing() {
		s.tracef(qp.Cfg.QPN, "cm", "accepted %v: rev %d crc=%v markers(tx)=%v ird=%d ord=%d rtr=%v",
			qp.remote, rev, i2r.CRC, r2i.Markers, qp.ird, qp.ord, e.rtr)
	}
	if !qp.rtrWait {
		qp.established()
	}
	rest := e.buf[e.reqN:]
	e.buf = nil
	s.mu.Lock()
	delete(s.pending, e)
	s.mu.Unlock()
	if len(rest) > 0 {
		qp.input(rest)
	}
	return nil
}

// Reject refuses the connection with an MPA Reply carrying R and
// privateData, then closes the stream.
func (r *ConnRequest) Reject(privateData []byte) error {
	e := r.c
	if len(privateData) > wire.MPAMaxPrivate {
		return fmt.Errorf("iwarp: Reject: private data %d bytes (max %d)", len(privateData), wire.MPAMaxPrivate)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.state != cepWaitAnswer {
		return ErrAnswered
	}
	e.rejectLocked(privateData)
	return nil
}

// rejectLocked sends the reject and closes; the stream is reset if the
// peer does not close within CloseTimeout.
func (e *cep) rejectLocked(privateData []byte) {
	s := e.s
	rev := s.cfg.MPARev
	if e.req != nil && e.req.Rev() >= wire.MPARev1 && e.req.Rev() < rev {
		rev = e.req.Rev()
	}
	b, _ := wire.AppendMPAFrame(nil, &wire.MPAFields{Reply: true, Reject: true, CRC: s.ourCRC(), Rev: rev, PrivateData: privateData})
	e.conn.Write(b)
	e.conn.Close()
	s.ctr.inc(MPARejectsSent)
	e.state = cepDead
	c := e.conn
	e.timer = s.cfg.Clock.AfterFunc(s.cfg.CloseTimeout, func() { c.Abort() })
	e.forget()
}

// canConnect checks that the QP may take a connection. Caller holds Mu.
func (qp *QP) canConnect() error {
	switch {
	case qp.destroyed:
		return fmt.Errorf("iwarp: QP %#x destroyed", qp.Cfg.QPN)
	case qp.CurState != verbs.QPSInit:
		return fmt.Errorf("iwarp: QP %#x is %v, not INIT: %w", qp.Cfg.QPN, qp.CurState, verbs.ErrInvalidState)
	case qp.cm != cmIdle && qp.cm != cmClosed:
		return ErrBusy
	}
	return nil
}

// establish enters full operation with the negotiated framings. Caller
// holds Mu and has set conn, ird, ord and the RTR fields.
func (qp *QP) establish(tx, rx wire.Framing) {
	qp.cm = cmConnected
	qp.connErr = nil
	qp.txFraming, qp.rxFraming = tx, rx
	qp.dfr = wire.NewDeframer(rx, qp.s.cfg.MaxRecvULPDU)
	// Over a stream that keeps records whole, each FPDU is one record
	// sized to the connection's segment payload (MSS less TCP options),
	// so that every segment begins with an FPDU (RFC 5044 §5, §6), as
	// siw's do; behind segmentation offload the stream batches full-size
	// FPDUs and says where they may cross segments (netstack.go).
	mss := qp.s.cfg.MSS
	qp.records = nil
	if rw, ok := qp.conn.(stream.RecordWriter); ok {
		qp.records = rw
		if sp := rw.SegmentPayload(); sp > 0 {
			mss = min(mss, max(sp, minMSS))
		}
	}
	qp.maxULPDU = ulpduFor(mss, tx.Markers)
	if cap(qp.payload) < qp.maxULPDU {
		qp.payload = make([]byte, qp.maxULPDU)
	}
	qp.payload = qp.payload[:cap(qp.payload)]
	qp.tx, qp.txEnds, qp.txOff, qp.blocked, qp.closeAfter = qp.tx[:0], qp.txEnds[:0], 0, false, false
	qp.req.connReset()
	qp.resp.connReset()
	qp.s.ctr.inc(ConnEstablished)
	qp.setState(verbs.QPSRTS)
}

// established reports full operation (both sides may send).
func (qp *QP) established() {
	ev := ConnEvent{Type: EventEstablished, QPN: qp.Cfg.QPN, Local: qp.local, Remote: qp.remote}
	qp.notify(ev)
}

func (qp *QP) notify(ev ConnEvent) {
	if f := qp.s.cfg.OnConnEvent; f != nil && !qp.destroyed {
		qp.later(func() { f(ev) })
	}
}

func (qp *QP) writableFunc(gen uint64) func() {
	return func() {
		qp.Mu.Lock()
		defer qp.unlock()
		if qp.gen != gen || qp.conn == nil {
			return
		}
		qp.blocked = false
		qp.flushTx()
		qp.progress()
	}
}

// Connect opens a connection from QP qpn (in INIT, not connected) to
// remote: TCP, then the MPA Request with privateData, our IRD and ORD, and
// the RTR offer. It returns at once; done (which may be nil) is called
// once, without engine locks held, with the outcome. On success the QP is
// in RTS; on failure it stays in INIT and Connect may be tried again.
func (s *Stack) Connect(qpn uint32, remote netip.AddrPort, privateData []byte, ird, ord uint16, done func(ConnectResult)) error {
	if len(privateData) > MaxPrivateData || ird > MaxIRDORD || ord > MaxIRDORD {
		return fmt.Errorf("iwarp: Connect: private data %d bytes (max %d), IRD %d, ORD %d (max %d)",
			len(privateData), MaxPrivateData, ird, ord, MaxIRDORD)
	}
	qp := s.lookup(qpn)
	if qp == nil {
		return fmt.Errorf("iwarp: Connect: no QP %#x", qpn)
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return ErrStackClosed
	}
	rev := s.cfg.MPARev
	f := wire.MPAFields{CRC: s.ourCRC(), Markers: s.cfg.Markers, Rev: rev, Enhanced: rev >= wire.MPARev2, PrivateData: privateData}
	if f.Enhanced {
		f.IRDORD = wire.IRDORD{IRD: ird, ORD: ord}
		if s.cfg.RTR != RTRNone {
			f.IRDORD.PeerToPeer = true
			f.IRDORD.WriteRTR = s.cfg.RTR.offers(rtrWrite)
			f.IRDORD.ReadRTR = s.cfg.RTR.offers(rtrRead)
			f.IRDORD.SendRTR = s.cfg.RTR.offers(rtrSend)
		}
	}
	b, err := wire.AppendMPAFrame(nil, &f)
	if err != nil {
		return err
	}
	qp.Mu.Lock()
	defer qp.unlock()
	if err := qp.canConnect(); err != nil {
		return err
	}
	qp.gen++
	gen := qp.gen
	qp.cm, qp.active, qp.remote = cmDialing, true, remote
	qp.mpaReq, qp.onConnect, qp.connErr = b, done, nil
	qp.ird, qp.ord = int(ird), int(ord)
	if s.tracing() {
		s.tracef(qpn, "cm", "connecting to %v", remote)
	}
	cancel := s.cfg.Network.Dial(s.cfg.Addr, remote, func(c stream.Conn, err error) { qp.dialed(gen, c, err) })
	if qp.gen == gen && qp.cm == cmDialing {
		qp.cancelDial = cancel
	}
	return nil
}

// dialed is the Dial's outcome.
func (qp *QP) dialed(gen uint64, c stream.Conn, err error) {
	qp.Mu.Lock()
	defer qp.unlock()
	if qp.gen != gen || qp.cm != cmDialing || qp.destroyed {
		if c != nil {
			c.Abort()
		}
		return
	}
	qp.cancelDial = nil
	s := qp.s
	if err != nil {
		s.ctr.inc(ConnFailed)
		qp.cm = cmIdle
		qp.finishConnect(ConnectResult{Err: fmt.Errorf("iwarp: connect to %v: %w", qp.remote, err)})
		return
	}
	if s.cfg.Tee != nil {
		c = s.cfg.Tee(c)
	}
	qp.conn = c
	qp.local, qp.remote = c.LocalAddr(), c.RemoteAddr()
	qp.cm = cmAwaitReply
	qp.hs = qp.hs[:0]
	c.SetReceiver(func(p []byte) {
		qp.Mu.Lock()
		if qp.gen == gen && qp.conn != nil {
			qp.input(p)
		}
		qp.unlock()
	}, func(err error) {
		qp.Mu.Lock()
		if qp.gen == gen {
			qp.streamClosed(err)
		}
		qp.unlock()
	})
	c.SetWritable(qp.writableFunc(gen))
	if _, err := c.Write(qp.mpaReq); err != nil {
		qp.connectFailed(fmt.Errorf("iwarp: sending the MPA Request: %w", err), true)
		return
	}
	s.ctr.inc(MPARequests)
	qp.mpaTimer.Set(s.cfg.ConnectTimeout)
	if s.tracing() {
		s.tracef(qp.Cfg.QPN, "cm", "TCP connected %v -> %v; MPA Request sent", qp.local, qp.remote)
	}
}

// finishConnect reports the outcome of Connect.
func (qp *QP) finishConnect(r ConnectResult) {
	r.QPN = qp.Cfg.QPN
	if r.Local == (netip.AddrPort{}) {
		r.Local, r.Remote = qp.local, qp.remote
	}
	if done := qp.onConnect; done != nil && !qp.destroyed {
		qp.onConnect = nil
		qp.later(func() { done(r) })
	}
	if qp.s.tracing() {
		if r.Err != nil {
			qp.s.tracef(qp.Cfg.QPN, "cm", "connect failed: %v", r.Err)
		} else {
			qp.s.tracef(qp.Cfg.QPN, "cm", "connected to %v: crc=%v markers(tx)=%v ird=%d ord=%d rtr=%s",
				qp.remote, r.CRC, r.Markers, qp.ird, qp.ord, r.RTR)
		}
	}
}

// connectFailed ends a connection attempt before full operation; the QP
// stays in INIT.
func (qp *QP) connectFailed(err error, abort bool) {
	qp.connectFailedResult(ConnectResult{Err: err}, abort)
}

// connectFailedResult is connectFailed with a full result.
func (qp *QP) connectFailedResult(res ConnectResult, abort bool) {
	qp.s.ctr.inc(ConnFailed)
	qp.mpaTimer.Stop()
	if qp.conn != nil {
		if abort {
			qp.conn.Abort()
		} else {
			qp.conn.Close()
			c := qp.conn
			qp.s.cfg.Clock.AfterFunc(qp.s.cfg.CloseTimeout, func() { c.Abort() })
		}
	}
	qp.conn = nil
	qp.gen++
	qp.cm = cmIdle
	qp.finishConnect(res)
}

// mpaExpired: no MPA Reply in time.
func (qp *QP) mpaExpired() {
	if qp.cm != cmAwaitReply {
		return
	}
	qp.s.ctr.inc(MPATimeouts)
	qp.connectFailed(fmt.Errorf("%w: no MPA Reply from %v within %v", ErrMPATimeout, qp.remote, qp.s.cfg.ConnectTimeout), true)
}

// handshake takes stream bytes while the initiator waits for the Reply,
// and returns the bytes that follow the Reply once it is complete.
func (qp *QP) handshake(p []byte) {
	qp.hs = append(qp.hs, p...)
	f, n, err := wire.ParseMPAFrame(qp.hs)
	if err == wire.ErrIncomplete {
		return
	}
	s := qp.s
	if err != nil || !f.IsReply() {
		s.ctr.inc(MPAInvalid)
		if we, ok := err.(wire.Error); ok {
			s.ctr.incWire(we)
		}
		qp.connectFailed(fmt.Errorf("%w: bad MPA Reply from %v (%v)", ErrMPAInvalid, qp.remote, err), true)
		return
	}
	qp.mpaTimer.Stop()
	req := wire.MPAFrame(qp.mpaReq)
	res := ConnectResult{
		PrivateData: append([]byte(nil), f.ULPPrivateData()...), Rev: f.Rev(), HasIRDORD: f.HasIRDORD(),
		CRC: f.CRC() || req.CRC(), Markers: f.Markers(), RTR: "none",
	}
	if f.HasIRDORD() {
		v := f.IRDORD()
		res.IRD, res.ORD = v.IRD, v.ORD
	}
	if f.Reject() {
		s.ctr.inc(MPARejectsRcvd)
		res.Err = fmt.Errorf("%w (%d bytes of private data)", ErrRejected, len(res.PrivateData))
		qp.connectFailedResult(res, false)
		return
	}
	switch {
	case f.Rev() < wire.MPARev1 || f.Rev() > req.Rev():
		s.ctr.inc(MPAInvalid)
		qp.connectFailed(fmt.Errorf("%w: MPA Reply revision %d to our %d", ErrMPAInvalid, f.Rev(), req.Rev()), true)
		return
	case s.cfg.StrictCRC && f.CRC() != s.ourCRC():
		s.ctr.inc(StrictCRCRejects)
		qp.connectFailed(fmt.Errorf("%w: CRC strictness: responder C=%v, ours %v", ErrMPAInvalid, f.CRC(), s.ourCRC()), true)
		return
	}
	i2r, r2i := wire.Negotiate(req, f)
	rtr, noMatch := rtrNone, false
	if req.HasIRDORD() && req.IRDORD().PeerToPeer && f.HasIRDORD() && f.IRDORD().PeerToPeer {
		v, offer := f.IRDORD(), req.IRDORD()
		for _, k := range rtrPreference {
			if rtrFlag(v, k) && rtrFlag(offer, k) {
				rtr = k
				break
			}
		}
		noMatch = rtr == rtrNone
	}
	if f.HasIRDORD() {
		qp.ord = min(qp.ord, int(f.IRDORD().IRD))
	}
	qp.rtrSend, qp.rtrWait = rtr, false
	res.RTR = rtr.String()
	rest := qp.hs[n:]
	qp.establish(i2r, r2i)
	if noMatch {
		s.ctr.inc(NoMatchingRTR)
		res.Err = fmt.Errorf("%w: the responder chose no RTR we offered", ErrMPAInvalid)
		qp.finishConnectResult(res)
		qp.sendTerminate(termInfo{code: wire.TermLLPNoMatchingRTR}, res.Err)
		return
	}
	qp.finishConnectResult(res)
	qp.established()
	qp.progress()
	if len(rest) > 0 {
		rx := append([]byte(nil), rest...)
		qp.hs = qp.hs[:0]
		qp.input(rx)
	}
}

func (qp *QP) finishConnectResult(r ConnectResult) {
	if qp.onConnect == nil {
		return
	}
	qp.finishConnect(r)
}

// Disconnect ends QP qpn's connection in order: what was already written
// still goes out, the stream is closed, and the QP moves to ERR with its
// outstanding WRs flushed. The peer sees the stream close. A connection
// attempt in progress is abandoned.
func (s *Stack) Disconnect(qpn uint32) error {
	qp := s.lookup(qpn)
	if qp == nil {
		return fmt.Errorf("iwarp: Disconnect: no QP %#x", qpn)
	}
	qp.Mu.Lock()
	defer qp.unlock()
	switch qp.cm {
	case cmDialing, cmAwaitReply:
		if qp.cancelDial != nil {
			qp.later(qp.cancelDial)
			qp.cancelDial = nil
		}
		qp.connectFailed(fmt.Errorf("iwarp: connect abandoned: %w", stream.ErrCanceled), true)
	case cmConnected:
		if s.tracing() {
			s.tracef(qpn, "cm", "disconnect")
		}
		qp.connErr = nil
		qp.closeStream()
		qp.enterError()
	default:
		return ErrNotConnected
	}
	return nil
}

// closeStream closes our side of an established stream once what is
// queued has been written; the peer's FIN (or CloseTimeout) ends it.
func (qp *QP) closeStream() {
	if qp.cm != cmConnected {
		return
	}
	qp.cm = cmClosing
	qp.closeAfter = true
	qp.flushTx()
	qp.closeTimer.Set(qp.s.cfg.CloseTimeout)
}

func (qp *QP) closeExpired() {
	if qp.cm == cmClosing && qp.conn != nil {
		if qp.s.tracing() {
			qp.s.tracef(qp.Cfg.QPN, "cm", "peer did not close within %v: reset", qp.s.cfg.CloseTimeout)
		}
		qp.conn.Abort()
		qp.detach(qp.connErr)
	}
}

// orphan closes an established stream (or lets one closing in order
// finish) without its QP, as Linux releases the socket of a siw QP that is
// destroyed, after rdma_disconnect or not (sock_release: an orderly
// close): the FIN follows what the stream has taken (FPDUs the QP still
// holds go with it), the peer's FIN ends the stream, and CloseTimeout
// resets it if none comes. A reset here instead reached the peer before
// its own FIN (rping over siw: the server's rping saw its connection
// reset, and once exited on a stale event channel).
func (qp *QP) orphan() {
	c := qp.conn
	t := qp.s.cfg.Clock.AfterFunc(qp.s.cfg.CloseTimeout, func() { c.Abort() })
	c.SetReceiver(nil, func(error) { t.Stop() })
	c.Close()
	qp.detach(qp.connErr)
}

// teardown ends the connection at once (abort) or in order.
func (qp *QP) teardown(err error, abort bool) {
	switch qp.cm {
	case cmDialing, cmAwaitReply:
		if qp.cancelDial != nil {
			qp.later(qp.cancelDial)
			qp.cancelDial = nil
		}
		qp.connectFailed(err, true)
		return
	}
	if qp.connErr == nil {
		qp.connErr = err
	}
	if qp.conn == nil {
		return
	}
	if abort {
		qp.conn.Abort()
		qp.detach(qp.connErr)
		qp.enterError()
		return
	}
	qp.closeStream()
	qp.enterError()
}

// detach forgets an established stream: the connection is over.
func (qp *QP) detach(err error) {
	qp.conn = nil
	qp.gen++
	qp.cm = cmClosed
	qp.closeTimer.Stop()
	qp.tx, qp.txEnds, qp.records = qp.tx[:0], qp.txEnds[:0], nil
	qp.blocked, qp.closeAfter = false, false
	qp.notify(ConnEvent{Type: EventDisconnected, QPN: qp.Cfg.QPN, Local: qp.local, Remote: qp.remote, Err: err})
	if qp.s.tracing() {
		qp.s.tracef(qp.Cfg.QPN, "cm", "connection ended: %v", err)
	}
}

// streamClosed is the stream's onClose.
func (qp *QP) streamClosed(err error) {
	switch qp.cm {
	case cmDialing, cmAwaitReply:
		qp.connectFailed(fmt.Errorf("%w: stream closed during MPA negotiation: %w", ErrMPAInvalid, err), false)
	case cmConnected:
		// The peer closed (or the stream broke) under a live QP.
		if qp.CurState != verbs.QPSErr {
			qp.s.ctr.inc(StreamLost)
			qp.raise(verbs.EventQPFatal)
		}
		if qp.connErr == nil {
			qp.connErr = err
		}
		if err == io.EOF {
			qp.conn.Close()
		}
		qp.detach(qp.connErr)
		qp.enterError()
	case cmClosing:
		if err != io.EOF && qp.connErr == nil {
			qp.connErr = err
		}
		qp.detach(qp.connErr)
	}
}
