package roce

import (
	"fmt"
	"net/netip"

	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce/wire"
)

// QP is one RC queue pair of a Stack: a requester, a completer and a
// responder sharing one lock, one path and one transmit buffer.
type QP struct {
	s *Stack
	verbs.QPCore

	mtu   int
	encap wire.Encap
	peer  netip.Addr
	// tx is the buffer a frame outside a burst is built in, borrowed from
	// the stack from startFrame until emit sent it.
	tx *txBuf
	// A burst being built (see beginBatch): frames in the slots of a burst
	// buffer borrowed from the stack's pool.
	batching  bool
	burst     *burstBuf
	scratch   [8]byte
	grh       [GRHLen]byte // UD: the GRH area written into receive buffers
	wc        verbs.WC
	ackQueued bool // on the stack's list of QPs owing an ACK
	destroyed bool
	ports     []uint16 // UDP source ports held on the link (ports.go)
	// budgetQueued: the QP is in the FIFO of QPs waiting for the stack's
	// budget (budget.go); guarded by the budget's lock, not by Mu.
	budgetQueued bool

	req  requester
	resp responder
}

// ErrStateChanged is returned by Modify when the QP left the state nic
// validated the transition from.
var ErrStateChanged = fmt.Errorf("roce: QP state changed: %w", verbs.ErrInvalidState)

// maxFrame is the largest frame a QP builds: Ethernet, 802.1Q, IPv6, UDP,
// BTH, the longest header set (RETH+ImmDt, AETH+AtomicAckETH, AtomicETH),
// a 4096-byte payload, pad and ICRC.
const maxFrame = wire.EthLen + wire.VLANLen + wire.IPv6Len + wire.UDPLen + wire.BTHLen + 32 + 4096 + 4 + wire.ICRCLen

func newQP(s *Stack, cfg *verbs.QPConfig) *QP {
	qp := &QP{s: s, QPCore: verbs.QPCore{Cfg: *cfg}}
	if cfg.Type == verbs.QPTypeUD {
		// UD has no path: its messages are one packet of at most the
		// port's MTU (IBTA §9.8.3, C10-93.1.1 in rxe's reading).
		qp.mtu = cfg.PortMTU.Bytes()
		if qp.mtu == 0 {
			qp.mtu = 1024
		}
	}
	qp.req.init(qp)
	qp.resp.init(qp)
	return qp
}

// Query implements verbs.Engine.
func (qp *QP) Query() verbs.QPAttr {
	qp.Mu.Lock()
	defer qp.Mu.Unlock()
	a := qp.QueryLocked()
	a.SQPSN = qp.req.psn
	a.RQPSN = qp.resp.epsn
	return a
}

// Modify implements verbs.Engine: it applies attributes nic validated.
func (qp *QP) Modify(cur verbs.QPState, attr *verbs.QPAttr, mask verbs.QPAttrMask) error {
	qp.Mu.Lock()
	defer qp.Mu.Unlock()
	if qp.destroyed {
		return fmt.Errorf("roce: QP %#x destroyed", qp.Cfg.QPN)
	}
	if qp.CurState != cur {
		return fmt.Errorf("%w: is %v, not %v", ErrStateChanged, qp.CurState, cur)
	}
	qp.applyAttrs(attr, mask)
	if mask&(verbs.AttrAV|verbs.AttrPathMTU) != 0 && qp.Attr.PathMTU != 0 {
		if err := qp.setPath(); err != nil {
			return err
		}
	}
	if mask&verbs.AttrState != 0 {
		qp.enterState(attr.State)
	}
	return nil
}

// applyAttrs copies the attributes mask selects into the QP, and the
// retry counts, responder resources and PSNs they set.
func (qp *QP) applyAttrs(attr *verbs.QPAttr, mask verbs.QPAttrMask) {
	qp.Attr.Apply(attr, mask)
	if mask&verbs.AttrRetryCnt != 0 {
		qp.req.retryLeft = attr.RetryCnt
	}
	if mask&verbs.AttrRNRRetry != 0 {
		qp.req.rnrLeft = attr.RNRRetry
	}
	if mask&verbs.AttrMaxDestRdAtomic != 0 {
		qp.resp.sizeResources(int(attr.MaxDestRdAtomic))
	}
	if mask&verbs.AttrRQPSN != 0 {
		qp.resp.epsn = attr.RQPSN & wire.PSNMask
	}
	if mask&verbs.AttrSQPSN != 0 {
		qp.req.setPSN(attr.SQPSN & wire.PSNMask)
	}
}

// enterState moves the QP to next: RESET and ERR send an owed ACK first;
// RTS and SQD let the requester go on.
func (qp *QP) enterState(next verbs.QPState) {
	switch next {
	case verbs.QPSReset:
		qp.sendOwedAck()
		qp.reset()
	case verbs.QPSErr:
		qp.sendOwedAck()
		qp.enterError()
		return
	case verbs.QPSSQD:
		qp.req.drainNotified = false
	}
	if qp.s.tracing() && next != qp.CurState {
		qp.s.tracef(qp.Cfg.QPN, "qp", "state %v -> %v", qp.CurState, next)
	}
	qp.CurState = next
	if next == verbs.QPSRTS || next == verbs.QPSSQD {
		qp.req.progress()
	}
}

// setPath derives the connected QP's frame encapsulation from its address
// vector (RC and UC).
func (qp *QP) setPath() error {
	qp.mtu = qp.Attr.PathMTU.Bytes()
	e, dst, err := qp.pathFor(&qp.Attr.AV)
	if err != nil {
		return err
	}
	qp.encap, qp.peer = e, dst
	return nil
}

// pathFor builds the encapsulation towards an address vector: source
// address from the GID table, destination from the DGID (an IPv4-mapped GID
// means IPv4), traffic class and hop limit into the IP header, the per-QP
// UDP source port, and the next hop's MAC.
func (qp *QP) pathFor(av *verbs.AddressVector) (wire.Encap, netip.Addr, error) {
	s := qp.s
	if int(av.SGIDIndex) >= len(s.cfg.Addrs) {
		return wire.Encap{}, netip.Addr{}, fmt.Errorf("roce: sgid index %d out of range", av.SGIDIndex)
	}
	src := s.cfg.Addrs[av.SGIDIndex].Unmap()
	dst := av.DGID
	if dst.Is4In6() {
		dst = dst.Unmap()
	}
	if !dst.IsValid() || src.Is4() != dst.Is4() {
		return wire.Encap{}, netip.Addr{}, fmt.Errorf("roce: destination %v unreachable from source %v", av.DGID, src)
	}
	e := wire.Encap{
		SrcMAC: s.cfg.MAC, Src: src, Dst: dst,
		TOS: av.TrafficClass, TTL: av.HopLimit, FlowLabel: av.FlowLabel,
		DF: true, SrcPort: av.SrcPort, DstPort: s.cfg.UDPPort,
	}
	if e.TTL == 0 {
		e.TTL = 64 // a hop limit of 0 cannot leave the host
	}
	if e.SrcPort == 0 {
		e.SrcPort = SourcePort(qp.Cfg.QPN)
	} else {
		qp.holdPort(e.SrcPort)
	}
	if s.cfg.PeerPort != nil && !dst.IsMulticast() { // a group's members listen on the RoCEv2 port
		if p := s.cfg.PeerPort(dst); p != 0 {
			e.DstPort = p
		}
	}
	switch {
	case dst.IsMulticast():
		e.DstMAC = mcastMAC(dst)
	case av.DMAC != [6]byte{}:
		e.DstMAC = av.DMAC
	case s.cfg.Resolve != nil:
		if mac, ok := s.cfg.Resolve(dst); ok {
			e.DstMAC = mac
			break
		}
		fallthrough
	default:
		e.DstMAC = [6]byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}
	}
	return e, dst, nil
}

// SourcePort is the UDP source port rxe uses for a QP: 0xC000 plus a 14-bit
// multiplicative hash of the QPN (hash_32), so that ECMP spreads QPs while
// each QP's packets stay on one path.
func SourcePort(qpn uint32) uint16 { return 0xC000 | uint16((qpn*0x61C88647)>>(32-14)) }

// reliable reports whether the QP is RC: acknowledged, retried, in order.
func (qp *QP) reliable() bool { return qp.Cfg.Type == verbs.QPTypeRC }

// enterSQE moves a UC or UD QP to the Send Queue Error state after a
// send-side error (IBTA §10.3.1.3): the failed WR has completed with its
// status, the rest of the send queue is flushed, and the receive side keeps
// working. Modify SQE→RTS resumes sending.
func (qp *QP) enterSQE() {
	if qp.CurState == verbs.QPSErr || qp.CurState == verbs.QPSSQE {
		return
	}
	if qp.s.tracing() {
		qp.s.tracef(qp.Cfg.QPN, "qp", "state %v -> SQE", qp.CurState)
	}
	qp.CurState = verbs.QPSSQE
	qp.req.flush()
}

// reset returns the QP to its freshly created condition (modify to RESET):
// queues are emptied without completions.
func (qp *QP) reset() {
	qp.req.reset()
	qp.resp.reset()
	qp.Attr = verbs.QPAttr{}
	if qp.Cfg.Type != verbs.QPTypeUD {
		qp.mtu = 0
	}
}

// RecvPosted implements verbs.Engine. RC needs no action: an RNR-NAKed
// requester retries after its timer, and credits are read from the queue
// when the next ACK is built.
func (qp *QP) RecvPosted() {}

// Destroy implements verbs.Engine. An ACK still owed (coalescing defers
// it past the receive completion the application may already have seen)
// is sent first: otherwise the peer would retry into a QP that is gone.
func (qp *QP) Destroy() {
	qp.Mu.Lock()
	qp.sendOwedAck()
	qp.destroyed = true
	qp.CurState = verbs.QPSErr
	qp.req.retx.Stop()
	qp.req.rnr.Stop()
	qp.req.releaseAllBudget()
	qp.resp.more.Stop()
	qp.Mu.Unlock()
	qp.s.removeQP(qp.Cfg.QPN)
	qp.releasePorts()
}

// sendOwedAck sends the ACK the responder still owes before the
// application takes the QP out of service: the receive path sends ACKs
// after the consumers it woke have run (Stack.InputBatch), so a consumer
// may move the QP to ERR (rdma_disconnect) in answer to a message whose
// ACK has not gone out, and the peer would retry a request that was
// executed and completed.
func (qp *QP) sendOwedAck() {
	switch qp.CurState {
	case verbs.QPSRTR, verbs.QPSRTS, verbs.QPSSQD, verbs.QPSSQE:
		qp.resp.flushAck()
	}
}

// enterError moves the QP to ERR: timers stop, every outstanding send WR
// and every receive WR of the QP's own queue completes with WR_FLUSH_ERR
// (IBTA §10.3.1: "all outstanding WRs are completed in error").
// A WR that caused the error has already been completed with its status.
func (qp *QP) enterError() {
	if qp.CurState == verbs.QPSErr {
		return
	}
	if qp.s.tracing() {
		qp.s.tracef(qp.Cfg.QPN, "qp", "state %v -> ERR", qp.CurState)
	}
	qp.CurState = verbs.QPSErr
	qp.req.flush()
	qp.resp.flush()
	if qp.Cfg.UsesSRQ && qp.Cfg.Event != nil {
		qp.Cfg.Event(verbs.EventQPLastWQEReached)
	}
}

// raise reports an asynchronous event.
func (qp *QP) raise(e verbs.AsyncEvent) {
	if qp.Cfg.Event != nil {
		qp.Cfg.Event(e)
	}
}

// pushSend and pushRecv queue completions. A completion that finds its CQ
// full is lost (the CQ raises CQ_ERR) and counted; as on Linux rxe, whose
// users expect it, the requester goes on (rxe's completer ignores the
// failed post) and the responder moves the QP to ERR (rxe's class G). IBTA
// would fail the QP either way (a CQ Error, then a Local Work Queue
// Catastrophic Error for the QPs that post to it); nic/cq.go says more.
//
// The WC goes through a field of the QP: a pointer to a local would escape
// through the interface call and cost an allocation per completion. The CQ
// copies it (verbs.CompletionQueue.Push).
func (qp *QP) pushSend(wc verbs.WC) {
	qp.wc = wc
	if !qp.Cfg.SendCQ.Push(&qp.wc) {
		qp.s.ctr.inc(CQOverflow)
	}
}

func (qp *QP) pushRecv(wc verbs.WC) {
	qp.wc = wc
	if !qp.Cfg.RecvCQ.Push(&qp.wc) {
		qp.s.ctr.inc(CQOverflow)
		qp.enterError()
	}
}

// startFrame returns the transmit buffer holding room for the encapsulation
// and the transport packet of h with an n-byte payload, and the payload room.
//
// A connected QP's packets go to its destination QP; a UD packet carries the
// destination the WR named, already in h.
func (qp *QP) startFrame(h *wire.Headers, n int) (frame, payload []byte) {
	h.BTH.PKey = wire.DefaultPKey
	if qp.Cfg.Type != verbs.QPTypeUD {
		h.BTH.DestQP = qp.Attr.DestQPN
	}
	return wire.AppendPacketSpace(qp.frameRoom()[:qp.encap.EncapLen()], h, n)
}

// emit seals and sends a frame built by startFrame; inside a burst it is
// queued and goes out with the burst.
func (qp *QP) emit(frame []byte) {
	qp.encap.Seal(frame)
	if qp.batching {
		qp.burst.frames = append(qp.burst.frames, frame)
		if len(qp.burst.frames) == maxBatch {
			qp.flushBatch()
			qp.batching = true
		}
		return
	}
	if err := qp.s.cfg.Link.Send(frame); err == nil {
		qp.s.ctr.inc(SentPkts)
	}
	// The link copied the frame (Endpoint.Send): the buffer goes back.
	if qp.tx != nil {
		qp.s.putTx(qp.tx)
		qp.tx = nil
	}
}

// maxBatch is the most frames a burst hands the link at once.
const maxBatch = 32

// beginBatch starts a burst: the frames emitted until flushBatch go to the
// link in one call (one sendmmsg on a kernel socket) when the link can take
// batches. Each frame of a burst is built in its own slot of the QP's
// arena, since the link reads them all at the end.
func (qp *QP) beginBatch() {
	if qp.s.sender != nil {
		qp.batching = true
	}
}

// flushBatch sends the burst and ends it, returning the burst buffer to
// the stack's pool: the link reads the frames only during the call.
func (qp *QP) flushBatch() {
	qp.batching = false
	b := qp.burst
	if b == nil {
		return
	}
	qp.burst = nil
	if len(b.frames) > 0 {
		if err := qp.s.sender.SendBatch(b.frames); err == nil {
			qp.s.ctr.add(SentPkts, len(b.frames))
		}
	}
	qp.s.putBurst(b)
}

// frameRoom returns the empty buffer the next frame is built in: the
// transmit buffer, or inside a burst the next slot of the burst buffer.
// Both are borrowed from the stack until the frame is sent, so a QP holds
// no frame memory between sends.
func (qp *QP) frameRoom() []byte {
	if !qp.batching {
		if qp.tx == nil {
			qp.tx = qp.s.getTx()
		}
		return qp.tx[:0]
	}
	if qp.burst == nil {
		qp.burst = qp.s.getBurst()
	}
	i := len(qp.burst.frames) * maxFrame
	return qp.burst.arena[i : i : i+maxFrame]
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
