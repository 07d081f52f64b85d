package roce

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce/wire"
	"github.com/rnic/rnic/transport/clock"
)

// The requester turns send WQEs into request packets (IBTA Vol 1 §9.7.2):
// it segments messages by the path MTU, assigns PSNs, decides AckReq, keeps
// at most Window PSNs unacknowledged, honours the responder's credits
// (§9.7.7.2), the ORD limit (max_rd_atomic) and fences, and resends from a
// given PSN when the completer asks (go-back-N). Packets are rebuilt from
// the WQE on every (re)transmission, so nothing but the WQE is kept.

// swqe is a send WQE in the send queue ring.
type swqe struct {
	wr       verbs.SendWR
	sgl      []verbs.SGE // backing array for wr.SGL, owned by the slot
	inline   []byte      // backing array for inline data
	isInline bool
	length   int
	npkts    int // PSNs the WQE consumes (a READ: one per response packet)
	firstPSN uint32
	lastPSN  uint32
	ssn      uint32 // send sequence number, compared with the credit limit
	started  bool   // PSNs assigned, at least one packet sent
	done     bool   // acknowledged or fully answered
	rdAtomic bool   // READ or atomic: completed by a response
	rcvd     int    // READ response packets placed so far
	readFrom int    // the packet the last READ request asked from (> 0: a retry)
	credit   bool   // consumes a receive WQE at the responder
	local    bool   // LOCAL_INV: never on the wire
	errSt    verbs.WCStatus
	failed   bool // a local error: complete with errSt when reached
}

type requester struct {
	qp      *QP
	sq      []swqe
	head    uint64 // oldest WQE not yet retired to the CQ
	next    uint64 // WQE to (re)transmit next
	tail    uint64 // next free slot
	nextPkt int    // packet index within sq[next]
	psn     uint32 // PSN of the next packet
	unacked uint32 // oldest unacknowledged PSN
	maxSent uint32 // one past the highest PSN sent
	ssn     uint32 // last SSN assigned

	unlimited bool // the responder does not report credits
	lsn       uint32
	lastMSN   uint32

	sinceAckReq   int
	rdAtomicOut   int // started READ/atomic WQEs not yet retired
	retryLeft     uint8
	rnrLeft       uint8
	rnrWait       bool
	retrying      bool   // a retry sequence is under way: one at a time
	maxRespPSN    uint32 // highest PSN answered by a READ response or atomic ACK
	replayFloor   uint32 // while retrying, answers at or below it are replays
	stalls        int    // retries answered by the peer without progress
	busy          int    // responses without progress since the last retry
	rnrPSN        uint32
	drainNotified bool

	// The congestion window (window.go): cwnd 0 is the stack's Window.
	cwnd, ssthresh, grown int

	// The stack's budget (budget.go): held PSNs from unacked on, of unit
	// bytes each; turnLeft: packets it may still take in its turn.
	held, unit, turnLeft int
	budgetBlocked        bool

	retx     clock.Deadline // the local ACK timer
	retxWait linkWait       // what it waits for on a lossless link (backlog.go)
	rnr      clock.Deadline // the wait an RNR NAK asked for
}

// Errors PostSend returns; nic checks most limits first, these are the
// engine's own backstops.
var (
	ErrSendQueueFull = fmt.Errorf("roce: send queue: %w", verbs.ErrQueueFull)
	ErrTooManySGE    = errors.New("roce: too many SGEs")
	ErrInline        = errors.New("roce: inline data")
)

func (r *requester) init(qp *QP) {
	r.qp = qp
	n := int(qp.Cfg.Cap.MaxSendWR)
	if n < 1 {
		n = 1
	}
	r.sq = make([]swqe, n)
	// Every slot's SGL and inline room is a window of one array each: two
	// allocations per QP, not two per slot.
	nsge, ninl := max(int(qp.Cfg.Cap.MaxSendSGE), 1), int(qp.Cfg.Cap.MaxInlineData)
	sges, inl := make([]verbs.SGE, n*nsge), make([]byte, n*ninl)
	for i := range r.sq {
		r.sq[i].sgl = sges[i*nsge : i*nsge : (i+1)*nsge]
		r.sq[i].inline = inl[i*ninl : i*ninl : (i+1)*ninl]
	}
	r.unlimited = true // until the responder reports credits
	clk := qp.s.cfg.Clock
	r.retx.Init(clk, qp.Mu.Lock, qp.Mu.Unlock, qp.unlessDestroyed(qp.retransmitTimeout))
	r.rnr.Init(clk, qp.Mu.Lock, qp.Mu.Unlock, qp.unlessDestroyed(qp.rnrExpired))
}

func (r *requester) reset() {
	r.retx.Stop()
	r.rnr.Stop()
	r.releaseAllBudget()
	sq, qp := r.sq, r.qp
	*r = requester{qp: qp, sq: sq, unlimited: true, retx: r.retx, rnr: r.rnr}
}

func (r *requester) slot(i uint64) *swqe { return &r.sq[i%uint64(len(r.sq))] }

func (r *requester) setPSN(p uint32) {
	r.releaseAllBudget()
	r.psn, r.unacked, r.maxSent = p, p, p
	r.maxRespPSN = wire.PSNAdd(p, -1)
}

// PostSend implements verbs.Engine.
func (qp *QP) PostSend(wr *verbs.SendWR) error {
	qp.Mu.Lock()
	defer qp.Mu.Unlock()
	r := &qp.req
	if qp.destroyed {
		return fmt.Errorf("roce: QP %#x destroyed", qp.Cfg.QPN)
	}
	if qp.CurState == verbs.QPSErr || qp.CurState == verbs.QPSSQE {
		qp.pushSend(verbs.WC{WRID: wr.ID, Status: verbs.WCWRFlushErr, Opcode: wr.Opcode.CompletionOpcode(), QPN: qp.Cfg.QPN})
		return nil
	}
	if !opAllowed(qp.Cfg.Type, wr.Opcode) {
		return fmt.Errorf("roce: opcode %v not supported on %v", wr.Opcode, qp.Cfg.Type)
	}
	if qp.Cfg.Type == verbs.QPTypeUD && wr.AH == nil {
		return fmt.Errorf("roce: UD send without an address handle")
	}
	if r.tail-r.head >= uint64(len(r.sq)) {
		return ErrSendQueueFull
	}
	w := r.slot(r.tail)
	if len(wr.SGL) > cap(w.sgl) {
		return ErrTooManySGE
	}
	sgl, inl := w.sgl[:0], w.inline[:0]
	*w = swqe{wr: *wr, sgl: append(sgl, wr.SGL...), inline: inl}
	w.wr.SGL = w.sgl
	w.length = int(memory.TotalLength(w.sgl))
	switch wr.Opcode {
	case verbs.WRRDMARead:
		w.rdAtomic = true
	case verbs.WRAtomicCmpSwp, verbs.WRAtomicFetchAdd, verbs.WRAtomicWrite:
		w.rdAtomic, w.length = true, 8
	case verbs.WRFlush:
		// FLUSH and ATOMIC WRITE are answered by a response and take a
		// responder resource at the peer, as READs and atomics do, so
		// they count against max_rd_atomic and a fence waits for them.
		w.rdAtomic, w.length = true, int(wr.FlushLen)
	case verbs.WRSend, verbs.WRSendWithImm, verbs.WRSendWithInv, verbs.WRRDMAWriteWithImm:
		w.credit = true
	case verbs.WRLocalInv, verbs.WRBindMW:
		w.local = true
	}
	if wr.Flags&verbs.SendInline != 0 && !w.local && !w.rdAtomic {
		// Inline data is copied now, so the buffer may be reused as soon
		// as PostSend returns: from wr.Inline when the caller (or nic)
		// gives the bytes, else from the SGL through the lkeys (rnic's
		// addresses live in registered memory).
		src := wr.Inline
		if src != nil {
			w.length = len(src)
		}
		if w.length > cap(w.inline) {
			return fmt.Errorf("%w: %d bytes exceed max_inline_data %d", ErrInline, w.length, cap(w.inline))
		}
		w.inline = w.inline[:w.length]
		if src != nil {
			copy(w.inline, src)
		} else if _, f := qp.Cfg.Memory.Gather(qp.Cfg.PD, w.sgl, w.inline); f != memory.Ok {
			return fmt.Errorf("%w: %v", ErrInline, f)
		}
		w.isInline = true
	}
	if !w.local {
		r.ssn = (r.ssn + 1) & wire.PSNMask
		w.ssn = r.ssn
	}
	r.tail++
	r.postProgress()
	return nil
}

// postProgress is progress after a post. An ACK the responder owes but has
// not sent yet (the receive path lets a woken consumer post first, see
// Stack.InputBatch) rides in the same burst as the new requests: one
// sendmmsg instead of two on the round trip of a ping-pong. It goes first,
// as on a NIC that acknowledges at once (rxe): the peer sees its request
// acknowledged before it sees the answer its consumer may be waiting for.
// A ping-pong that waits for one CQ's event at a time on a channel it
// shares (perftest's ib_send_lat -e) otherwise takes the answer's event
// where it waits for its SEND's, leaves its 1-entry send CQ full, and
// loses the next send completion.
func (r *requester) postProgress() {
	qp := r.qp
	if !r.canSend() {
		return
	}
	qp.beginBatch()
	defer qp.flushBatch()
	if r.next < r.tail && !r.rnrWait {
		qp.resp.flushAck()
	}
	r.send()
}

// opAllowed is the transport's table of send opcodes (IBTA Table 36): UC
// has no READ and no atomics, UD only SENDs.
func opAllowed(t verbs.QPType, op verbs.WROpcode) bool {
	switch op {
	case verbs.WRSend, verbs.WRSendWithImm:
		return true
	case verbs.WRRDMAWrite, verbs.WRRDMAWriteWithImm, verbs.WRLocalInv, verbs.WRBindMW:
		return t != verbs.QPTypeUD
	case verbs.WRRDMARead, verbs.WRAtomicCmpSwp, verbs.WRAtomicFetchAdd, verbs.WRSendWithInv,
		verbs.WRFlush, verbs.WRAtomicWrite:
		return t == verbs.QPTypeRC
	}
	return false
}

// packets returns how many PSNs a WQE of length bytes consumes.
func (qp *QP) packets(w *swqe) int {
	if w.rdAtomic && w.wr.Opcode != verbs.WRRDMARead || w.length == 0 {
		return 1
	}
	return (w.length + qp.mtu - 1) / qp.mtu
}

// progress sends whatever the send queue, the window, the credits, ORD and
// fences allow. It runs after every event that could unblock it.
func (r *requester) progress() {
	if !r.canSend() {
		return
	}
	r.qp.beginBatch()
	defer r.qp.flushBatch()
	r.send()
}

// canSend reports whether the QP's state lets the requester send.
func (r *requester) canSend() bool {
	return r.qp.CurState == verbs.QPSRTS || r.qp.CurState == verbs.QPSSQD
}

// send is progress's work inside a burst.
func (r *requester) send() {
	qp := r.qp
	for r.next < r.tail && !r.rnrWait {
		w := r.slot(r.next)
		if w.failed {
			break
		}
		if !w.started {
			step := r.start(w)
			if step == stepStop {
				break
			}
			if step == stepNext {
				continue
			}
		}
		if r.windowFull() || !r.haveBudget(w) {
			break
		}
		if !qp.sendRequest(w, r.nextPkt) {
			break
		}
		r.stepPSN(w)
		if !qp.reliable() {
			r.completeUnreliable(w)
			continue
		}
		if !r.retx.Active() {
			qp.armRetransmit()
		}
	}
	r.checkDrained()
}

// startStep is what start decided for a WQE.
type startStep uint8

const (
	stepGo   startStep = iota // the WQE started: send its first packet
	stepNext                  // the WQE finished without a packet (LOCAL_INV, BIND_MW): on to the next
	stepStop                  // nothing more can go now
)

// start starts w, the next WQE, unless a rule holds it back.
func (r *requester) start(w *swqe) startStep {
	qp := r.qp
	if qp.CurState == verbs.QPSSQD {
		return stepStop // drain: no new WQE starts
	}
	if w.local {
		if r.head != r.next {
			return stepStop // a local operation waits for every earlier WQE (as rxe)
		}
		qp.localOp(w)
		r.next++
		r.retire()
		return stepNext
	}
	if !r.mayStart(w) {
		return stepStop
	}
	w.started = true
	w.npkts = qp.packets(w)
	w.firstPSN = r.psn
	w.lastPSN = wire.PSNAdd(r.psn, w.npkts-1)
	r.nextPkt = 0
	if w.rdAtomic {
		r.rdAtomicOut++
	}
	return stepGo
}

// mayStart reports whether w may start now: after the RDMA READs and
// atomics a fence waits for, within the ORD, with a credit and room in
// the window. A WQE that can never go (no ORD at all, a UD message longer
// than the MTU, a bad SGL) fails here.
func (r *requester) mayStart(w *swqe) bool {
	qp := r.qp
	if w.wr.Flags&verbs.SendFence != 0 && r.rdAtomicOut > 0 {
		return false
	}
	if w.rdAtomic {
		if qp.Attr.MaxRdAtomic == 0 {
			r.failLocal(w, verbs.WCLocQPOpErr)
			return false
		}
		if r.rdAtomicOut >= int(qp.Attr.MaxRdAtomic) {
			return false
		}
	}
	if qp.Cfg.Type == verbs.QPTypeUD && w.length > qp.mtu {
		// A UD message is one packet: longer than the MTU it fails, it
		// is never silently dropped (rxe fakes success).
		r.failLocal(w, verbs.WCLocLenErr)
		return false
	}
	if w.credit && qp.reliable() && !r.unlimited && wire.PSNDiff(w.ssn, r.lsn+1) > 0 {
		return false // no credit: wait for an ACK that grants one
	}
	if r.windowFull() {
		return false
	}
	if !w.isInline && w.length > 0 && !w.rdAtomic {
		if f := qp.checkSGL(w); f != memory.Ok {
			r.failLocal(w, verbs.WCLocProtErr)
			return false
		}
	}
	return true
}

// stepPSN moves past the packet of w just sent: a READ request reserves
// the PSNs of all its responses.
func (r *requester) stepPSN(w *swqe) {
	if w.wr.Opcode == verbs.WRRDMARead {
		r.psn = wire.PSNAdd(w.lastPSN, 1)
		r.next++
		r.nextPkt = 0
	} else {
		r.psn = wire.PSNAdd(r.psn, 1)
		r.nextPkt++
		if r.nextPkt >= w.npkts {
			r.next++
			r.nextPkt = 0
		}
	}
	if wire.PSNDiff(r.psn, r.maxSent) > 0 {
		r.maxSent = r.psn
	}
}

// completeUnreliable completes w once its last packet is sent: UC and UD
// acknowledge and retry nothing.
func (r *requester) completeUnreliable(w *swqe) {
	r.unacked = r.psn
	if r.nextPkt == 0 {
		w.done = true
		r.retire()
	}
}

// checkSGL verifies every SGE of a WQE before its first packet, so a bad
// lkey fails the WQE before any of it reaches the wire.
func (qp *QP) checkSGL(w *swqe) memory.Fault {
	need := memory.Access(0)
	if w.rdAtomic {
		need = memory.LocalWrite
	}
	for _, s := range w.wr.SGL {
		ref, f := qp.Cfg.Memory.CheckLocal(qp.Cfg.PD, s.LKey, s.Addr, s.Length, need)
		if f != memory.Ok {
			return f
		}
		ref.Release()
	}
	return memory.Ok
}

// failLocal marks a WQE that failed locally; it completes with st once
// every earlier WQE has completed, and then the QP enters ERR.
func (r *requester) failLocal(w *swqe, st verbs.WCStatus) {
	w.failed, w.errSt = true, st
	r.retire()
}

// armRetransmit starts the local ACK timer: 4.096 µs × 2^timeout (IBTA
// §9.7.6.1.3); timeout 0 means no timer.
func (qp *QP) armRetransmit() {
	if t := qp.Attr.Timeout; t != 0 {
		qp.s.markWait(&qp.req.retxWait)
		qp.req.retx.Set(ackTimeout(t))
	}
}

// requestOpcode picks the opcode for packet k of n of a WQE.
func requestOpcode(w *swqe, k, n int) wire.Opcode {
	first, last := k == 0, k == n-1
	switch w.wr.Opcode {
	case verbs.WRSend, verbs.WRSendWithImm, verbs.WRSendWithInv:
		switch {
		case first && last:
			return [...]wire.Opcode{wire.RCSendOnly, wire.RCSendOnlyImm, wire.RCSendOnlyInv}[sendVariant(w)]
		case first:
			return wire.RCSendFirst
		case last:
			return [...]wire.Opcode{wire.RCSendLast, wire.RCSendLastImm, wire.RCSendLastInv}[sendVariant(w)]
		}
		return wire.RCSendMiddle
	case verbs.WRRDMAWrite, verbs.WRRDMAWriteWithImm:
		imm := w.wr.Opcode == verbs.WRRDMAWriteWithImm
		switch {
		case first && last && imm:
			return wire.RCWriteOnlyImm
		case first && last:
			return wire.RCWriteOnly
		case first:
			return wire.RCWriteFirst
		case last && imm:
			return wire.RCWriteLastImm
		case last:
			return wire.RCWriteLast
		}
		return wire.RCWriteMiddle
	case verbs.WRRDMARead:
		return wire.RCReadRequest
	case verbs.WRAtomicCmpSwp:
		return wire.RCCmpSwap
	case verbs.WRFlush:
		return wire.RCFlush
	case verbs.WRAtomicWrite:
		return wire.RCAtomicWrite
	}
	return wire.RCFetchAdd
}

func sendVariant(w *swqe) int {
	switch w.wr.Opcode {
	case verbs.WRSendWithImm:
		return 1
	case verbs.WRSendWithInv:
		return 2
	}
	return 0
}

// sendRequest builds and sends packet k of WQE w. A READ sent with k > 0 is
// a partial retry: it asks only for the responses from packet k on.
func (qp *QP) sendRequest(w *swqe, k int) bool {
	r := &qp.req
	op := qp.requestOpcode(w, k)
	info := op.Info()
	psn := wire.PSNAdd(w.firstPSN, k)
	if w.wr.Opcode == verbs.WRRDMARead {
		w.readFrom = k
	}
	var h wire.Headers
	qp.requestBTH(&h, w, op, psn)
	off := k * qp.mtu
	n := 0
	switch info.Kind {
	case wire.KindSend, wire.KindWrite:
		n = min(qp.mtu, w.length-off)
	case wire.KindAtomicWrite:
		n = 8
	}
	requestExtHeaders(&h, w, op, off)
	if qp.Cfg.Type == verbs.QPTypeUD && !qp.udAddress(&h, w) {
		return false
	}
	frame, payload := qp.startFrame(&h, n)
	if info.Kind == wire.KindAtomicWrite {
		// The value's bytes as they lie in host memory, as rxe sends
		// the 8 bytes ibv_wr_atomic_write points at.
		binary.NativeEndian.PutUint64(payload, w.wr.Swap)
	} else if n > 0 && !qp.requestPayload(w, off, payload) {
		return false
	}
	if wire.PSNBefore(psn, r.maxSent) {
		qp.s.ctr.inc(RetransmittedPkts)
	}
	if qp.s.tracing() {
		qp.s.tracef(qp.Cfg.QPN, "req", "send %v psn=%d len=%d ackreq=%v", op, psn, n, h.BTH.AckReq)
	}
	if h.BTH.DestQP == verbs.MulticastQPN && qp.encap.Dst.IsMulticast() {
		qp.mcastLoop(frame)
	}
	qp.emit(frame)
	return true
}

// requestOpcode is the opcode of packet k of w on this QP's type.
func (qp *QP) requestOpcode(w *swqe, k int) wire.Opcode {
	op := requestOpcode(w, k, w.npkts)
	switch qp.Cfg.Type {
	case verbs.QPTypeUC:
		op |= 0x20 // UC opcodes are RC's SEND and WRITE opcodes plus 0x20
	case verbs.QPTypeUD:
		op = wire.UDSendOnly
		if w.wr.Opcode == verbs.WRSendWithImm {
			op = wire.UDSendOnlyImm
		}
	}
	return op
}

// requestBTH fills the BTH of a request packet: opcode, PSN, SE and
// AckReq (on the last packet of a message, every AckEvery packets, when
// the window fills, and at the end of the budget the QP holds).
func (qp *QP) requestBTH(h *wire.Headers, w *swqe, op wire.Opcode, psn uint32) {
	r := &qp.req
	info := op.Info()
	h.BTH.Opcode = op
	h.BTH.PSN = psn
	last := info.Last() || info.Pos == wire.PosNone
	// SE rides on the last packet of a message that consumes a receive
	// WQE (SEND, RDMA WRITE with immediate), when the WR asked for it.
	h.BTH.SE = w.wr.Flags&verbs.SendSolicited != 0 && info.Last() &&
		(info.Kind == wire.KindSend || info.Imm)
	ackReq := qp.reliable() && (last || r.sinceAckReq+1 >= qp.s.cfg.AckEvery ||
		int(wire.PSNDiff(wire.PSNAdd(psn, 1), r.unacked)) >= r.window() || r.budgetEnd(psn))
	h.BTH.AckReq = ackReq
	if ackReq {
		r.sinceAckReq = 0
	} else {
		r.sinceAckReq++
	}
}

// requestExtHeaders fills the extension headers op carries: RETH,
// ImmDt, IETH, AtomicETH, FETH; off is the packet's offset in the message.
func requestExtHeaders(h *wire.Headers, w *swqe, op wire.Opcode, off int) {
	info := op.Info()
	if info.Has(wire.HdrRETH) {
		h.RETH = wire.RETHFields{VA: w.wr.RemoteAddr + uint64(off), RKey: w.wr.RKey, Length: uint32(w.length - off)}
	}
	if info.Imm {
		h.Imm = w.wr.Imm
	}
	if info.Inv {
		h.IETH = w.wr.InvRKey
	}
	if info.Has(wire.HdrFETH) {
		h.FETH = wire.MakeFETH(uint8(w.wr.FlushType), uint8(w.wr.FlushLevel))
	}
	if info.Has(wire.HdrAtomicETH) {
		h.AtomicETH = wire.AtomicETHFields{VA: w.wr.RemoteAddr, RKey: w.wr.RKey}
		if op == wire.RCCmpSwap {
			h.AtomicETH.SwapAdd, h.AtomicETH.Compare = w.wr.Swap, w.wr.CompareAdd
		} else {
			h.AtomicETH.SwapAdd = w.wr.CompareAdd
		}
	}
}

// udAddress addresses a UD message anew: destination from the address
// handle, Q_Key from the WR unless it is a controlled one, which means
// "use the QP's own" (IBTA §10.2.4). A bad address handle fails w.
func (qp *QP) udAddress(h *wire.Headers, w *swqe) bool {
	e, _, err := qp.pathFor(w.wr.AH)
	if err != nil {
		qp.req.failLocal(w, verbs.WCLocQPOpErr)
		return false
	}
	qp.encap = e
	qkey := w.wr.RemoteQKey
	if qkey&wire.PrivilegedQKeyBit != 0 {
		qkey = qp.Attr.QKey
	}
	h.DETH = wire.DETHFields{QKey: qkey, SrcQP: qp.Cfg.QPN}
	h.BTH.DestQP = w.wr.RemoteQPN & wire.PSNMask
	return true
}

// requestPayload copies the packet's payload at off of w's message. The
// memory may have gone away mid-message (deregistered): that fails w with
// a local protection error.
func (qp *QP) requestPayload(w *swqe, off int, payload []byte) bool {
	if w.isInline {
		copy(payload, w.inline[off:off+len(payload)])
		return true
	}
	if _, f := qp.Cfg.Memory.GatherAt(qp.Cfg.PD, w.wr.SGL, off, payload); f != memory.Ok {
		qp.req.failLocal(w, verbs.WCLocProtErr)
		return false
	}
	return true
}

// localOp executes a LOCAL_INV or a BIND_MW. A bind that breaks a rule
// completes with MW_BIND_ERR (IBTA 10.6.7.2.5, as rxe), and, as every
// failed WQE, moves the QP to ERR.
func (qp *QP) localOp(w *swqe) {
	w.started = true
	if w.wr.Opcode == verbs.WRBindMW {
		if _, err := qp.Cfg.Memory.BindByKey(qp.Cfg.PD, qp.Cfg.QPN, w.wr.Bind); err != nil {
			if qp.s.tracing() {
				qp.s.tracef(qp.Cfg.QPN, "req", "BIND_MW failed: %v", err)
			}
			w.failed, w.errSt = true, verbs.WCMWBindErr
			return
		}
		w.done = true
		return
	}
	if f := qp.Cfg.Memory.Invalidate(qp.Cfg.PD, qp.Cfg.QPN, w.wr.InvRKey); f != memory.Ok {
		w.failed, w.errSt = true, verbs.WCLocProtErr
		return
	}
	w.done = true
}

// retire completes finished WQEs in posting order (completions of a send
// queue are never reordered). A locally failed WQE completes with its error
// and moves the QP to ERR.
func (r *requester) retire() {
	qp := r.qp
	for r.head < r.tail {
		w := r.slot(r.head)
		if w.failed {
			r.head++
			if w.rdAtomic && w.started {
				r.rdAtomicOut--
			}
			qp.pushSend(verbs.WC{WRID: w.wr.ID, Status: w.errSt, Opcode: w.wr.Opcode.CompletionOpcode(), QPN: qp.Cfg.QPN})
			if qp.reliable() {
				qp.enterError()
			} else {
				qp.enterSQE()
			}
			return
		}
		if !w.done {
			return
		}
		r.head++
		if w.rdAtomic {
			r.rdAtomicOut--
		}
		if qp.s.tracing() {
			qp.s.tracef(qp.Cfg.QPN, "comp", "wr %d (%v, psn %d..%d) complete", w.wr.ID, w.wr.Opcode, w.firstPSN, w.lastPSN)
		}
		if qp.Cfg.SigAll || w.wr.Flags&verbs.SendSignaled != 0 {
			wc := verbs.WC{WRID: w.wr.ID, Status: verbs.WCSuccess, Opcode: w.wr.Opcode.CompletionOpcode(), QPN: qp.Cfg.QPN}
			if w.rdAtomic {
				wc.ByteLen = uint32(w.length)
			}
			qp.pushSend(wc)
		}
	}
}

// flush completes every WQE not yet completed with WR_FLUSH_ERR.
func (r *requester) flush() {
	qp := r.qp
	r.retx.Stop()
	r.rnr.Stop()
	r.releaseAllBudget()
	for ; r.head < r.tail; r.head++ {
		w := r.slot(r.head)
		qp.pushSend(verbs.WC{WRID: w.wr.ID, Status: verbs.WCWRFlushErr, Opcode: w.wr.Opcode.CompletionOpcode(), QPN: qp.Cfg.QPN})
	}
	r.next, r.nextPkt, r.rdAtomicOut = r.tail, 0, 0
}

// checkDrained raises SQ_DRAINED once an SQD QP has nothing outstanding.
func (r *requester) checkDrained() {
	qp := r.qp
	if qp.CurState != verbs.QPSSQD || r.drainNotified {
		return
	}
	for i := r.head; i < r.tail; i++ {
		if r.slot(i).started && !r.slot(i).done {
			return
		}
	}
	r.drainNotified = true
	if qp.Attr.SQDrainNotify {
		qp.raise(verbs.EventSQDrained)
	}
}

// putAtomicResult writes an atomic's original remote value into the WQE's
// local buffer in host byte order, as verbs specifies.
func (qp *QP) putAtomicResult(w *swqe, orig uint64) memory.Fault {
	binary.NativeEndian.PutUint64(qp.scratch[:], orig)
	return qp.Cfg.Memory.Scatter(qp.Cfg.PD, w.wr.SGL, qp.scratch[:], 0)
}
