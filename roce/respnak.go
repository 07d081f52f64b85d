package roce

import (
	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce/wire"
)

// The responder's answers to a request it will not execute, one helper per
// NAK kind the AETH can carry (IBTA Vol 1 §9.7.5.2; wire.NAKCode): PSN
// sequence error, RNR, invalid request, remote access error, remote
// operational error. All but the first two are fatal:
// they move the QP to ERR, as rxe does for its class C/D errors.

// reject answers a request that failed a check step.
func (rs *responder) reject(psn uint32, c check) {
	if c == checkOpSeq || c == checkOpcode {
		rs.qp.s.ctr.inc(UnexpectedOpcode)
	}
	rs.nakInvalidRequest(psn)
}

// nakSequenceError answers a request beyond the expected PSN: one PSN
// sequence error NAK for the expected PSN per gap (§9.7.5.1.1), then
// silence until the gap closes.
func (rs *responder) nakSequenceError(psn uint32) {
	qp := rs.qp
	qp.s.ctr.inc(OutOfSequence)
	if rs.nakSent {
		return
	}
	rs.nakSent = true
	if qp.s.tracing() {
		qp.s.tracef(qp.Cfg.QPN, "resp", "psn %d but expected %d: NAK sequence error (once for this gap)", psn, rs.epsn)
	}
	rs.sendAck(wire.NAKSyndrome(wire.NAKPSNSeqError), rs.epsn)
	qp.s.ctr.inc(NaksSent)
}

// nakRNR answers a request that needs a receive WQE when none is posted:
// an RNR NAK carrying min_rnr_timer (§9.7.5.2.8); the QP stays in RTS.
func (rs *responder) nakRNR(psn uint32) {
	qp := rs.qp
	qp.s.ctr.inc(SendRNRErr)
	if qp.s.tracing() {
		qp.s.tracef(qp.Cfg.QPN, "resp", "psn %d needs a receive WQE, none posted: RNR NAK timer=%d", psn, qp.Attr.MinRNRTimer)
	}
	rs.flushAck()
	rs.sendAck(wire.RNRNAKSyndrome(qp.Attr.MinRNRTimer), psn)
}

// nakInvalidRequest answers a malformed or forbidden request: invalid
// request NAK, QP to ERR with a request-error async event.
func (rs *responder) nakInvalidRequest(psn uint32) {
	rs.nakInvalidRequestWQE(psn, verbs.WCRemInvReqErr)
}

// nakInvalidRequestWQE is nakInvalidRequest when the receive WQE held for
// the message completes with a status of its own (LOC_LEN_ERR for a SEND
// longer than the buffer, LOC_PROT_ERR for a failed SEND with Invalidate).
func (rs *responder) nakInvalidRequestWQE(psn uint32, wqeStatus verbs.WCStatus) {
	rs.qp.s.ctr.inc(NakInvalidRequest)
	rs.fatal(psn, wire.NAKInvalidRequest, wqeStatus, verbs.EventQPReqErr)
}

// nakAccess answers a memory fault on a remote access: a misaligned atomic
// is an invalid request, any other fault (rkey, PD, QP, bounds, rights) a
// remote access error.
func (rs *responder) nakAccess(psn uint32, f memory.Fault) {
	rs.qp.recordKeyFailure()
	ctr := &rs.qp.s.ctr
	switch f {
	case memory.Misaligned:
		ctr.inc(MisalignedAtomic)
		rs.nakInvalidRequest(psn)
		return
	case memory.BadKey, memory.BadPD, memory.BadQP, memory.Invalidated:
		ctr.inc(BadRKey)
	default:
		ctr.inc(AccessViolation)
	}
	rs.nakRemoteAccess(psn)
}

// nakRemoteAccess answers a request whose rkey check failed: remote access
// error NAK, QP to ERR with an access-error async event.
func (rs *responder) nakRemoteAccess(psn uint32) {
	rs.qp.s.ctr.inc(NakRemoteAccess)
	rs.fatal(psn, wire.NAKRemoteAccess, verbs.WCRemAccessErr, verbs.EventQPAccessErr)
}

// nakRemoteOperational answers a request the responder could not carry
// out for a local reason (a receive WQE whose buffers fault): remote
// operational error NAK, the WQE completed with wqeStatus, QP to ERR with
// a fatal async event.
func (rs *responder) nakRemoteOperational(psn uint32, wqeStatus verbs.WCStatus) {
	rs.qp.s.ctr.inc(NakRemoteOp)
	rs.fatal(psn, wire.NAKRemoteOpError, wqeStatus, verbs.EventQPFatal)
}

// fatal sends the NAK and moves the QP to ERR. A receive WQE held for the
// current message completes with wqeStatus. Only the nak* helpers call it.
func (rs *responder) fatal(psn uint32, code wire.NAKCode, wqeStatus verbs.WCStatus, ev verbs.AsyncEvent) {
	qp := rs.qp
	qp.s.ctr.inc(NaksSent)
	if qp.s.tracing() {
		qp.s.tracef(qp.Cfg.QPN, "resp", "psn %d: NAK %v, QP to ERR", psn, code)
	}
	rs.flushAck()
	rs.sendAck(wire.NAKSyndrome(code), psn)
	if rs.hasRWQE {
		rs.hasRWQE = false
		qp.pushRecv(verbs.WC{WRID: rs.rwqe.ID, Status: wqeStatus, Opcode: verbs.WCRecv, QPN: qp.Cfg.QPN})
	}
	qp.raise(ev)
	qp.enterError()
}
