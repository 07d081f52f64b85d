package roce

import (
	"time"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce/wire"
)

// The completer handles what comes back to the requester (IBTA Vol 1
// §9.7.5.2 and §9.9.2): ACKs, NAKs, RDMA READ responses and atomic
// acknowledgements. A response acknowledges every earlier PSN (implied
// ACK). A response that skips an outstanding READ or atomic means the
// skipped response was lost (implied NAK) and the requester retries it. A
// PSN sequence error NAK and the local ACK timeout make the requester resend
// from the PSN named (decrementing retry_cnt; exhausted → RETRY_EXC_ERR; 7
// is not infinite). An RNR NAK waits the timer it carries, then resends
// (rnr_retry, 7 = infinite). Remote errors complete the WQE with the
// matching status and move the QP to ERR. An ACK for a PSN never sent is a
// ghost and is ignored.

// ackTimeout is the local ACK timeout for a timeout exponent: 4.096 µs ×
// 2^t, kept in nanoseconds (IBTA §9.7.6.1.3).
func ackTimeout(t uint8) time.Duration { return time.Duration(4096<<t) * time.Nanosecond }

// handleResponse processes a response packet (caller holds qp.Mu).
func (qp *QP) handleResponse(p *wire.Packet) {
	r := &qp.req
	bth := p.BTH()
	psn := bth.PSN()
	if !wire.PSNBefore(psn, r.maxSent) {
		qp.s.ctr.inc(GhostAck)
		if qp.s.tracing() {
			qp.s.tracef(qp.Cfg.QPN, "comp", "ghost %v psn=%d (next unsent %d): ignored", p.Opcode(), psn, r.maxSent)
		}
		return
	}
	before := r.unacked
	info := p.Info()
	if info.Kind == wire.KindReadResponse || info.Kind == wire.KindAtomicAck {
		if qp.replayShowsPeerAlive(p, psn) {
			return
		}
		if wire.PSNBefore(r.maxRespPSN, psn) {
			r.maxRespPSN = psn
		}
	}
	switch info.Kind {
	case wire.KindAck:
		qp.handleAck(p, psn)
	case wire.KindReadResponse:
		qp.handleReadResponse(p, psn)
	case wire.KindAtomicAck:
		qp.handleAtomicAck(p, psn)
	}
	if qp.CurState == verbs.QPSErr {
		return
	}
	if n := wire.PSNDiff(r.unacked, before); n > 0 {
		r.growWindow(int(n))
		// Forward progress resets the retry counters (IBTA §9.7.6.1.3)
		// and restarts the timer.
		r.retryLeft, r.rnrLeft = qp.Attr.RetryCnt, qp.Attr.RNRRetry
		r.retrying, r.stalls, r.busy = false, 0, 0
		r.retx.Stop()
		r.settleBudget()
	} else if info.Kind == wire.KindReadResponse || info.Kind == wire.KindAtomicAck {
		qp.responderBusy(psn)
	}
	r.retire()
	qp.catchUp()
	r.progress()
	qp.updateTimer()
}

// responderBusy handles a READ response or atomic acknowledgement that made
// no progress: a duplicate, or a response the requester ignores because an
// earlier one is missing and a retry is under way. If it answers a READ or
// atomic still outstanding, the responder is alive and working through our
// requests (the rest of a long READ stream may still be arriving ahead of
// the replay a retry asked for), so the local ACK timer restarts, as rxe's
// completer restarts it after every response it processes. Without this, a
// READ streaming for longer than the timeout after one lost response times
// out again and again behind its own old stream until RETRY_EXC_ERR. The
// restarts are bounded: no more than twice the outstanding PSNs plus a
// window of such responses between two retries, so a peer that only ever
// repeats itself still meets the timeout.
func (qp *QP) responderBusy(psn uint32) {
	r := &qp.req
	w, _ := r.wqeAt(psn)
	if w == nil || !w.rdAtomic || w.done || !r.retx.Active() {
		return
	}
	r.busy++
	if r.busy > 2*int(wire.PSNDiff(r.maxSent, r.unacked))+qp.s.cfg.Window {
		return
	}
	qp.armRetransmit()
}

// updateTimer keeps the ACK timer running exactly while PSNs are
// unacknowledged and no RNR wait is in progress.
func (qp *QP) updateTimer() {
	r := &qp.req
	if wire.PSNBefore(r.unacked, r.maxSent) && !r.rnrWait && qp.CurState != verbs.QPSErr {
		if !r.retx.Active() {
			qp.armRetransmit()
		}
	} else {
		r.retx.Stop()
	}
}

func (qp *QP) handleAck(p *wire.Packet, psn uint32) {
	r := &qp.req
	aeth := p.AETH()
	syn := aeth.Syndrome()
	if wire.PSNBefore(psn, r.unacked) && syn.Type() != wire.AckTypeACK {
		qp.s.ctr.inc(DuplicateResponse)
		return // a stale NAK for something already resolved
	}
	switch syn.Type() {
	case wire.AckTypeACK:
		qp.updateCredits(aeth)
		if wire.PSNBefore(psn, r.unacked) {
			qp.s.ctr.inc(DuplicateResponse)
			if qp.s.tracing() {
				qp.s.tracef(qp.Cfg.QPN, "comp", "%v psn=%d: already acknowledged, credits updated", syn, psn)
			}
			return
		}
		if qp.s.tracing() {
			qp.s.tracef(qp.Cfg.QPN, "comp", "%v psn=%d msn=%d: acknowledges every PSN up to %d", syn, psn, aeth.MSN(), psn)
		}
		qp.ackBefore(wire.PSNAdd(psn, 1))
	case wire.AckTypeRNRNAK:
		qp.s.ctr.inc(RcvdRNRErr)
		if !qp.ackBefore(psn) {
			return
		}
		if qp.Attr.RNRRetry != 7 {
			if r.rnrLeft == 0 {
				qp.s.ctr.inc(RNRNakRetryErr)
				qp.failAt(psn, verbs.WCRNRRetryExcErr)
				return
			}
			r.rnrLeft--
		}
		d := wire.RNRDelay(syn.Value())
		if qp.s.tracing() {
			qp.s.tracef(qp.Cfg.QPN, "comp", "RNR NAK psn=%d: wait %v, then resend (rnr_retry left %d)", psn, d, r.rnrLeft)
		}
		r.rnrWait, r.rnrPSN = true, psn
		r.retx.Stop()
		r.rnr.Set(d)
	case wire.AckTypeNAK:
		switch syn.NAK() {
		case wire.NAKPSNSeqError:
			qp.s.ctr.inc(RcvdSeqErr)
			if !qp.ackBefore(psn) {
				return
			}
			if qp.s.tracing() {
				qp.s.tracef(qp.Cfg.QPN, "comp", "NAK PSN sequence error: responder expects %d, resend from there", psn)
			}
			qp.retry(psn)
		case wire.NAKInvalidRequest:
			qp.remoteError(psn, verbs.WCRemInvReqErr)
		case wire.NAKRemoteAccess:
			qp.remoteError(psn, verbs.WCRemAccessErr)
		default: // remote operational error, invalid RD request, reserved
			qp.remoteError(psn, verbs.WCRemOpErr)
		}
	default:
		qp.s.ctr.inc(UnexpectedOpcode) // reserved syndrome type
	}
}

func (qp *QP) remoteError(psn uint32, st verbs.WCStatus) {
	if qp.s.tracing() {
		qp.s.tracef(qp.Cfg.QPN, "comp", "NAK psn=%d: complete with %v, QP to ERR", psn, st)
	}
	if qp.ackBefore(psn) {
		qp.failAt(psn, st)
	}
}

// updateCredits takes the responder's credit count from an ACK's AETH
// (IBTA §9.7.7.2): the requester may start a receive-consuming message
// whose SSN is at most MSN + credits (+1, the one probe always allowed).
func (qp *QP) updateCredits(aeth wire.AETH) {
	r := &qp.req
	msn := aeth.MSN()
	if wire.PSNBefore(msn, r.lastMSN) {
		return // an older ACK: its credit count is stale
	}
	r.lastMSN = msn
	n, unlimited := aeth.Syndrome().Credits()
	r.unlimited = unlimited
	if !unlimited {
		r.lsn = wire.PSNAdd(msn, n)
	}
}

// wqeAt returns the started WQE whose PSN range holds psn, and its index.
func (r *requester) wqeAt(psn uint32) (*swqe, uint64) {
	for i := r.head; i < r.tail; i++ {
		w := r.slot(i)
		if !w.started {
			break
		}
		if wire.PSNAfterOrEqual(psn, w.firstPSN) && wire.PSNAfterOrEqual(w.lastPSN, psn) {
			return w, i
		}
	}
	return nil, 0
}

// ackBefore acknowledges every PSN before p. A READ or atomic entirely
// before p whose response is incomplete was skipped: that is an implied NAK,
// and the requester retries it; ackBefore then reports false.
func (qp *QP) ackBefore(p uint32) bool {
	r := &qp.req
	for i := r.head; i < r.tail; i++ {
		w := r.slot(i)
		if !w.started || w.failed {
			break
		}
		if w.done {
			continue
		}
		if !wire.PSNBefore(w.lastPSN, p) {
			// p falls inside w: a multi-packet SEND/WRITE is acknowledged
			// up to p.
			if !w.rdAtomic && wire.PSNBefore(w.firstPSN, p) && wire.PSNBefore(r.unacked, p) {
				r.unacked = p
			}
			return true
		}
		if w.rdAtomic {
			missing := wire.PSNAdd(w.firstPSN, w.rcvd)
			if r.retrying {
				// A retry for this gap is under way; later responses
				// of the old burst say nothing new.
				qp.s.ctr.inc(DuplicateResponse)
				return false
			}
			qp.s.ctr.inc(ImpliedNak)
			if qp.s.tracing() {
				qp.s.tracef(qp.Cfg.QPN, "comp", "implied NAK: response for psn %d skipped, resend from there", missing)
			}
			qp.retry(missing)
			return false
		}
		w.done = true
		r.unacked = wire.PSNAdd(w.lastPSN, 1)
	}
	if wire.PSNBefore(r.unacked, p) {
		r.unacked = p
	}
	return true
}

// retry resends from psn after a sequence error NAK, an implied NAK or a
// timeout, unless retry_cnt is exhausted.
func (qp *QP) retry(psn uint32) {
	r := &qp.req
	if r.retryLeft == 0 {
		qp.s.ctr.inc(RetryExceededErr)
		if qp.s.tracing() {
			qp.s.tracef(qp.Cfg.QPN, "comp", "retry_cnt exhausted at psn %d: RETRY_EXC_ERR", psn)
		}
		qp.failAt(r.unacked, verbs.WCRetryExcErr)
		return
	}
	r.retryLeft--
	r.lossWindow()
	qp.s.ctr.inc(CompleterRetryErr)
	r.retrying, r.busy = true, 0
	r.replayFloor = r.maxRespPSN
	qp.rewind(psn)
}

// rewind makes the requester resend from psn (go-back-N).
func (qp *QP) rewind(psn uint32) {
	r := &qp.req
	w, i := r.wqeAt(psn)
	if w == nil {
		return
	}
	r.next, r.nextPkt, r.psn = i, int(wire.PSNDiff(psn, w.firstPSN)), psn
	r.sinceAckReq = 0
	r.retx.Stop()
}

// catchUp moves the resend point past what the peer has acknowledged: a
// resend the window holds back (window.go) may be overtaken by a late ACK
// for the original packets, and must then go on from the first
// unacknowledged PSN, not send acknowledged (and retired) WQEs again.
func (qp *QP) catchUp() {
	r := &qp.req
	if !wire.PSNBefore(r.psn, r.unacked) {
		return
	}
	if w, _ := r.wqeAt(r.unacked); w != nil {
		qp.rewind(r.unacked)
		return
	}
	// Every started WQE is acknowledged and retired: the next is new.
	r.next, r.nextPkt, r.psn = r.head, 0, r.unacked
}

// failAt completes the WQE holding psn (or the oldest outstanding one) with
// st, then the QP enters ERR, flushing the rest.
func (qp *QP) failAt(psn uint32, st verbs.WCStatus) {
	r := &qp.req
	w, _ := r.wqeAt(psn)
	if w == nil && r.head < r.tail {
		w = r.slot(r.head)
	}
	if w != nil {
		w.failed, w.errSt = true, st
	}
	r.retire()
	qp.enterError()
}

// retransmitTimeout is the local ACK timer's expiry.
func (qp *QP) retransmitTimeout() {
	r := &qp.req
	if qp.CurState == verbs.QPSErr || !wire.PSNBefore(r.unacked, r.maxSent) || r.rnrWait {
		return
	}
	if qp.s.deferTimeout(&r.retxWait) {
		qp.s.ctr.inc(TimeoutsDeferred)
		if qp.s.tracing() {
			qp.s.tracef(qp.Cfg.QPN, "comp", "local ACK timeout: psn %d still queued on the link, or its answer: waiting again", r.unacked)
		}
		r.retx.Set(ackTimeout(qp.Attr.Timeout))
		return
	}
	qp.s.ctr.inc(RetransmitTimeouts)
	r.retrying = false
	if qp.s.tracing() {
		qp.s.tracef(qp.Cfg.QPN, "comp", "local ACK timeout: psn %d unacknowledged (retry_cnt left %d)", r.unacked, r.retryLeft)
	}
	qp.retry(r.unacked)
	r.timeoutWindow()
	r.progress()
	qp.updateTimer()
}

// rnrExpired ends an RNR wait: resend from the NAKed PSN.
func (qp *QP) rnrExpired() {
	r := &qp.req
	if !r.rnrWait || qp.CurState == verbs.QPSErr {
		return
	}
	r.rnrWait = false
	qp.rewind(r.rnrPSN)
	r.progress()
	qp.updateTimer()
}

func (qp *QP) handleReadResponse(p *wire.Packet, psn uint32) {
	r := &qp.req
	w, _ := r.wqeAt(psn)
	if w != nil && !w.done && verbs.IBTA15Opcodes.Has(w.wr.Opcode) {
		qp.handleIBTA15Response(p, psn, w)
		return
	}
	if w == nil || w.wr.Opcode != verbs.WRRDMARead || w.done {
		qp.s.ctr.inc(DuplicateResponse)
		if qp.s.tracing() {
			qp.s.tracef(qp.Cfg.QPN, "comp", "%v psn=%d answers no outstanding READ: ignored", p.Opcode(), psn)
		}
		return
	}
	if !qp.ackBefore(w.firstPSN) {
		return
	}
	k := int(wire.PSNDiff(psn, w.firstPSN))
	if k < w.rcvd {
		qp.s.ctr.inc(DuplicateResponse)
		if qp.s.tracing() {
			qp.s.tracef(qp.Cfg.QPN, "comp", "%v psn=%d already placed: ignored", p.Opcode(), psn)
		}
		return
	}
	if k > w.rcvd {
		// Responses before this one were lost (implied NAK). Only one
		// retry runs at a time: the rest of the old burst is ignored.
		missing := wire.PSNAdd(w.firstPSN, w.rcvd)
		if r.retrying {
			qp.s.ctr.inc(DuplicateResponse)
			if qp.s.tracing() {
				qp.s.tracef(qp.Cfg.QPN, "comp", "%v psn=%d while psn %d is missing and a retry is under way: ignored", p.Opcode(), psn, missing)
			}
			return
		}
		qp.s.ctr.inc(ImpliedNak)
		if qp.s.tracing() {
			qp.s.tracef(qp.Cfg.QPN, "comp", "%v psn=%d but psn %d is missing (implied NAK): resend the READ from there", p.Opcode(), psn, missing)
		}
		qp.retry(missing)
		return
	}
	info := p.Info()
	want := wire.PosMiddle
	switch {
	case w.npkts == 1:
		want = wire.PosOnly
	case k == 0:
		want = wire.PosFirst
	case k == w.npkts-1:
		want = wire.PosLast
	}
	if k > 0 && k == w.readFrom && (want == wire.PosMiddle && info.Pos == wire.PosFirst ||
		want == wire.PosLast && info.Pos == wire.PosOnly) {
		// A retried READ asked for the rest from packet k: responders
		// (rxe, rnic) resume the original response with Middle or Last;
		// one that answers the retry as a new request, First or Only, is
		// accepted too, as the spec text leaves the replay's first
		// opcode open.
		want = info.Pos
	}
	payload := p.Payload()
	wantLen := min(qp.mtu, w.length-k*qp.mtu)
	if info.Pos != want || len(payload) != wantLen {
		qp.failAt(psn, verbs.WCBadRespErr)
		return
	}
	if aeth := p.AETH(); aeth != nil {
		qp.updateCredits(aeth)
	}
	if len(payload) > 0 {
		if f := qp.Cfg.Memory.Scatter(qp.Cfg.PD, w.wr.SGL, payload, k*qp.mtu); f != memory.Ok {
			qp.failAt(psn, verbs.WCLocProtErr)
			return
		}
	}
	w.rcvd++
	r.unacked = wire.PSNAdd(psn, 1)
	if w.rcvd == w.npkts {
		w.done = true
	}
}

// handleIBTA15Response completes a FLUSH or an ATOMIC WRITE: IBTA 1.5
// answers both with an RDMA READ Response Only carrying no payload (rxe's
// send_read_response_ack), an ACK in its AETH. Anything else at their PSN
// is a bad response.
func (qp *QP) handleIBTA15Response(p *wire.Packet, psn uint32, w *swqe) {
	if !qp.ackBefore(psn) {
		return
	}
	if p.Info().Pos != wire.PosOnly || len(p.Payload()) != 0 || p.AETH().Syndrome().Type() != wire.AckTypeACK {
		qp.failAt(psn, verbs.WCBadRespErr)
		return
	}
	qp.updateCredits(p.AETH())
	if qp.s.tracing() {
		qp.s.tracef(qp.Cfg.QPN, "comp", "%v psn=%d answers %v: complete", p.Opcode(), psn, w.wr.Opcode)
	}
	w.done = true
	qp.req.unacked = wire.PSNAdd(psn, 1)
}

func (qp *QP) handleAtomicAck(p *wire.Packet, psn uint32) {
	r := &qp.req
	w, _ := r.wqeAt(psn)
	if w == nil || !verbs.AtomicOpcodes.Has(w.wr.Opcode) || w.done {
		qp.s.ctr.inc(DuplicateResponse)
		return
	}
	if !qp.ackBefore(psn) {
		return
	}
	if syn := p.AETH().Syndrome(); syn.Type() != wire.AckTypeACK {
		qp.failAt(psn, verbs.WCBadRespErr)
		return
	}
	qp.updateCredits(p.AETH())
	if f := qp.putAtomicResult(w, p.AtomicAckETH().OrigData()); f != memory.Ok {
		qp.failAt(psn, verbs.WCLocProtErr)
		return
	}
	w.done = true
	r.unacked = wire.PSNAdd(psn, 1)
}

// replayShowsPeerAlive handles a READ response or atomic acknowledgement
// that arrives while a retry is under way and answers the PSN right after
// the missing one, at or below the highest PSN answered before the retry.
// A replay of our retransmitted requests starts at the missing PSN, so when
// only the missing answer was lost again, the next one is the first to
// arrive. Any other PSN in that range is taken for a straggler of a burst
// already seen and ignored: on a wire that reorders (RoCEv2 over routed
// IP), the old burst's late responses arrive in any order, and asking again
// for each would make the responder replay the rest of the READ once per
// straggler, a storm that grows its backlog until our timer gives up. A
// copy of that one PSN comes once per replay, so rounds stay one per
// replay. The peer is alive and answering, which restores retry_cnt as a
// response does, and the requester asks again at once instead of after a
// timeout. Rounds like
// this without any progress are bounded (8 × (retry_cnt+1)), so a peer that
// never delivers the missing answer still ends in RETRY_EXC_ERR. It reports
// whether it consumed the packet.
func (qp *QP) replayShowsPeerAlive(p *wire.Packet, psn uint32) bool {
	r := &qp.req
	if !r.retrying || psn != wire.PSNAdd(r.unacked, 1) || wire.PSNBefore(r.replayFloor, psn) {
		return false
	}
	r.stalls++
	if r.stalls > 8*(int(qp.Attr.RetryCnt)+1) {
		qp.s.ctr.inc(RetryExceededErr)
		qp.failAt(r.unacked, verbs.WCRetryExcErr)
		return true
	}
	if qp.s.tracing() {
		qp.s.tracef(qp.Cfg.QPN, "comp", "%v psn=%d replayed while psn %d is still missing: peer alive, ask again", p.Opcode(), psn, r.unacked)
	}
	r.retryLeft = qp.Attr.RetryCnt
	qp.s.ctr.inc(ImpliedNak)
	qp.retry(r.unacked)
	r.replayFloor = psn // the rest of this replay ascends past psn
	r.progress()
	qp.updateTimer()
	return true
}
