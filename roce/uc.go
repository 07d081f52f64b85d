package roce

import (
	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce/wire"
)

// The UC responder (IBTA Vol 1 §9.8.2, §9.9.3.2): unreliable connected
// service has PSNs but no ACKs, NAKs or retries. A PSN gap means packets
// were lost: the message in progress is abandoned and the responder
// resynchronises on the next First or Only packet. A message that cannot be
// delivered — no receive WQE, bad rkey, too long — is dropped silently
// (class D/E) and counted; the QP stays in RTS. A receive WQE whose message
// was abandoned is kept for the next one (nothing was completed on it).

func (rs *responder) ucRequest(p *wire.Packet) {
	qp := rs.qp
	info := p.Info()
	psn := p.BTH().PSN()
	if psn != rs.epsn {
		qp.s.ctr.inc(OutOfSequence)
		if rs.inMsg != msgNone && qp.s.tracing() {
			qp.s.tracef(qp.Cfg.QPN, "resp", "UC psn %d but expected %d: the message in progress is lost", psn, rs.epsn)
		}
		rs.abandon()
	}
	rs.epsn = wire.PSNAdd(psn, 1)
	first := info.First()
	switch {
	case rs.inMsg == msgDropping && !first:
		return // the rest of a message already given up
	case rs.inMsg != msgNone && rs.inMsg != msgDropping && first:
		// A new message while one was in progress: its Last was lost.
		qp.s.ctr.inc(OutOfSequence)
		rs.abandon()
	case (rs.inMsg == msgNone || rs.inMsg == msgDropping) && !first:
		qp.s.ctr.inc(UnexpectedOpcode) // Middle or Last without a First
		return
	}
	if rs.checkLength(info, len(p.Payload())) != checkOK {
		rs.drop(UCDroppedMsgs, info)
		return
	}
	switch info.Kind {
	case wire.KindSend:
		rs.ucSend(p, info)
	case wire.KindWrite:
		rs.ucWrite(p, info)
	}
}

// abandon gives up the message in progress; a receive WQE stays for reuse.
func (rs *responder) abandon() {
	if rs.inMsg != msgNone && rs.inMsg != msgDropping {
		rs.qp.s.ctr.inc(UCDroppedMsgs)
	}
	rs.inMsg, rs.off = msgNone, 0
}

// drop abandons the current message and ignores the rest of it.
func (rs *responder) drop(c Counter, info *wire.OpInfo) {
	rs.qp.s.ctr.inc(c)
	rs.inMsg, rs.off = msgNone, 0
	if !info.Last() {
		rs.inMsg = msgDropping
	}
}

func (rs *responder) ucSend(p *wire.Packet, info *wire.OpInfo) {
	qp := rs.qp
	payload := p.Payload()
	if info.First() {
		if !rs.hasRWQE {
			wr, ok := qp.Cfg.RQ.Pop()
			if !ok {
				rs.drop(RcvNoBuf, info) // UC has no RNR NAK
				return
			}
			rs.rwqe, rs.hasRWQE = wr, true
			rs.rwqeLen = memory.TotalLength(wr.SGL)
		}
		rs.off = 0
	}
	if uint64(rs.off+len(payload)) > rs.rwqeLen {
		rs.drop(UCDroppedMsgs, info)
		return
	}
	if f := qp.Cfg.Memory.Scatter(qp.Cfg.PD, rs.rwqe.SGL, payload, rs.off); len(payload) > 0 && f != memory.Ok {
		rs.drop(UCDroppedMsgs, info)
		return
	}
	rs.off += len(payload)
	if !info.Last() {
		rs.inMsg = msgSend
		return
	}
	wc := verbs.WC{WRID: rs.rwqe.ID, Status: verbs.WCSuccess, Opcode: verbs.WCRecv, ByteLen: uint32(rs.off),
		QPN: qp.Cfg.QPN, SrcQP: qp.Attr.DestQPN}
	if info.Imm {
		wc.Imm, wc.Flags = p.ImmDt().Imm(), verbs.WCFlagWithImm
	}
	rs.inMsg, rs.hasRWQE, rs.off = msgNone, false, 0
	rs.msn = wire.PSNAdd(rs.msn, 1)
	qp.pushRecv(wc)
	if p.BTH().SE() {
		qp.Cfg.RecvCQ.Solicited()
	}
}

func (rs *responder) ucWrite(p *wire.Packet, info *wire.OpInfo) {
	qp := rs.qp
	payload := p.Payload()
	if info.First() {
		reth := p.RETH()
		rs.wva, rs.wrkey, rs.wlen, rs.off = reth.VA(), reth.RKey(), reth.DMALength(), 0
		if qp.Attr.AccessFlags&memory.RemoteWrite == 0 {
			rs.drop(AccessViolation, info)
			return
		}
	}
	if uint64(rs.off)+uint64(len(payload)) > uint64(rs.wlen) || info.Last() && rs.off+len(payload) != int(rs.wlen) {
		rs.drop(UCDroppedMsgs, info)
		return
	}
	if len(payload) > 0 {
		va := rs.wva + uint64(rs.off)
		ref, f := qp.Cfg.Memory.CheckRemote(qp.Cfg.PD, qp.Cfg.QPN, rs.wrkey, va, uint32(len(payload)), memory.RemoteWrite)
		if f == memory.Ok {
			f = ref.Write(va, payload)
			ref.Release()
		}
		if f != memory.Ok {
			qp.recordKeyFailure()
			if f == memory.BadKey || f == memory.BadPD || f == memory.Invalidated {
				rs.drop(BadRKey, info)
			} else {
				rs.drop(AccessViolation, info)
			}
			return
		}
	}
	rs.off += len(payload)
	if !info.Last() {
		rs.inMsg = msgWrite
		return
	}
	rs.inMsg, rs.off = msgNone, 0
	rs.msn = wire.PSNAdd(rs.msn, 1)
	if info.Imm {
		wr, ok := qp.Cfg.RQ.Pop()
		if !ok {
			qp.s.ctr.inc(RcvNoBuf)
			return
		}
		qp.pushRecv(verbs.WC{WRID: wr.ID, Status: verbs.WCSuccess, Opcode: verbs.WCRecvRDMAWithImm, ByteLen: rs.wlen,
			Imm: p.ImmDt().Imm(), Flags: verbs.WCFlagWithImm, QPN: qp.Cfg.QPN, SrcQP: qp.Attr.DestQPN})
		if p.BTH().SE() {
			qp.Cfg.RecvCQ.Solicited()
		}
	}
}
