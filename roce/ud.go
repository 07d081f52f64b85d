package roce

import (
	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce/wire"
)

// The UD responder (IBTA Vol 1 §9.8.3, §11.4.1.1): every message is one
// SEND packet with a DETH. Its Q_Key must match the QP's; a mismatch is
// dropped silently and counted, as rxe's check_keys drops it and counts a
// Q_Key violation. Each receive buffer starts with a 40-byte area for the
// GRH, as verbs requires: RoCEv2 has no GRH, so like rxe the area holds
// the IPv6 header, or 20 zero bytes and the IPv4 header (union
// rdma_network_hdr). The message must fit after it; no receive WQE means
// the message is dropped (there is no RNR NAK on UD).
//
// A datagram longer than the path MTU, or than the receive buffer after the
// GRH area, is dropped silently and counted (ud_too_long); the receive WQE
// stays posted for the next datagram and the QP stays in RTS (IBTA class
// D: a remote peer must not be able to take a UD QP down, as rxe fixed in
// f67ac0061c76). Only a fault of the receive WQE itself (a bad lkey) is a
// local error that completes it in error and moves the QP to ERR.

// GRHLen is the receive-buffer area reserved for the GRH on UD.
const GRHLen = 40

func (qp *QP) udReceive(f *wire.Frame) {
	p := &f.Packet
	deth := p.DETH()
	if deth.QKey() != qp.Attr.QKey {
		qp.s.ctr.inc(QKeyViolation)
		return
	}
	payload := p.Payload()
	if len(payload) > qp.mtu {
		qp.s.ctr.inc(UDTooLong)
		return
	}
	wr, ok, fits := qp.Cfg.RQ.PopFit(uint64(GRHLen + len(payload)))
	if !ok {
		qp.s.ctr.inc(RcvNoBuf)
		return
	}
	if !fits {
		qp.s.ctr.inc(UDTooLong)
		if qp.s.tracing() {
			qp.s.tracef(qp.Cfg.QPN, "resp", "UD SEND of %d bytes does not fit the receive buffer: dropped", len(payload))
		}
		return
	}
	wc := verbs.WC{WRID: wr.ID, QPN: qp.Cfg.QPN, Opcode: verbs.WCRecv, SrcQP: deth.SrcQP(), Flags: verbs.WCFlagGRH}
	grh := qp.grh[:]
	clear(grh)
	ip := f.IP()
	if f.IPv6 {
		copy(grh, ip[:wire.IPv6Len])
		wc.SL = verbs.WCSLRoCEIPv6
	} else {
		copy(grh[20:], ip[:wire.IPv4Len])
		wc.SL = verbs.WCSLRoCEIPv4
	}
	fault := qp.Cfg.Memory.Scatter(qp.Cfg.PD, wr.SGL, grh, 0)
	if fault == memory.Ok && len(payload) > 0 {
		fault = qp.Cfg.Memory.Scatter(qp.Cfg.PD, wr.SGL, payload, GRHLen)
	}
	if fault != memory.Ok {
		wc.Status = verbs.WCLocProtErr
		qp.pushRecv(wc)
		qp.enterError()
		return
	}
	wc.Status, wc.ByteLen = verbs.WCSuccess, uint32(GRHLen+len(payload))
	if p.Info().Imm {
		wc.Imm, wc.Flags = p.ImmDt().Imm(), wc.Flags|verbs.WCFlagWithImm
	}
	qp.pushRecv(wc)
	if p.BTH().SE() {
		qp.Cfg.RecvCQ.Solicited()
	}
}
