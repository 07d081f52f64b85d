package roce

import (
	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce/wire"
	"github.com/rnic/rnic/transport/clock"
)

// The responder executes requests in PSN order (IBTA Vol 1 §9.7.4, §9.7.5.1):
//
//   - PSN ahead of the expected one: a PSN sequence error NAK, once per gap.
//   - PSN behind (duplicate): SEND/WRITE are re-ACKed with the last good
//     PSN (C9-105); a READ is replayed from the responder resources, a
//     sub-range included; an atomic returns its cached result and is not
//     executed again.
//   - In order: opcode sequence, QP access rights, lengths and the rkey are
//     checked before a byte moves; SENDs take a receive WQE (none: RNR NAK
//     with min_rnr_timer); READs and atomics take a responder resource
//     (max_dest_rd_atomic; zero means they are invalid). Errors are NAKed
//     (invalid request, remote access, remote operational error) and move
//     the QP to ERR, as rxe does for class C errors.
//
// The MSN counts completed messages (a READ when it executes, C9-148) and
// every ACK carries the credits the receive queue can grant (§9.7.7.2;
// 0x1F "unlimited" with an SRQ). ACKs requested by several packets of one
// receive batch are coalesced into one.

type msgKind uint8

const (
	msgNone msgKind = iota
	msgSend
	msgWrite
	msgDropping // UC: ignoring the rest of a message given up
)

// resKind is what a responder resource holds.
type resKind uint8

const (
	resRead     resKind = iota // an RDMA READ: replayed from memory
	resAtomic                  // CmpSwap or FetchAdd: the original value replayed
	resRespOnly                // FLUSH or ATOMIC WRITE: the empty response replayed
)

// resource is a responder resource: an executed READ, atomic, FLUSH or
// ATOMIC WRITE, kept so a duplicate can be answered (§9.7.5.1.4) and never
// executed twice.
type resource struct {
	valid  bool
	kind   resKind
	first  uint32
	last   uint32
	va     uint64
	rkey   uint32
	length uint32
	orig   uint64
}

type responder struct {
	qp      *QP
	epsn    uint32
	msn     uint32
	nakSent bool // a sequence error NAK was sent for the current gap

	inMsg   msgKind
	rwqe    verbs.RecvWR
	rwqeLen uint64
	hasRWQE bool
	off     int // bytes of the current message placed so far
	wva     uint64
	wrkey   uint32
	wlen    uint32

	res     []resource
	resNext int
	stream  readStream     // the READ responses being sent (readstream.go)
	more    clock.Deadline // continues the stream after a burst

	ackPending bool
	ackPSN     uint32
}

func (rs *responder) init(qp *QP) {
	rs.qp = qp
	rs.more.Init(qp.s.cfg.Clock, qp.Mu.Lock, qp.Mu.Unlock, qp.unlessDestroyed(rs.streamMore))
}

func (rs *responder) reset() {
	rs.more.Stop()
	qp, res := rs.qp, rs.res
	clear(res)
	*rs = responder{qp: qp, res: res, more: rs.more}
}

// sizeResources sets the resource ring to max_dest_rd_atomic entries.
func (rs *responder) sizeResources(n int) {
	if n != len(rs.res) {
		rs.res = make([]resource, n)
		rs.resNext = 0
	}
}

// receive is the entry point for a packet addressed to this QP.
func (qp *QP) receive(f *wire.Frame) {
	qp.Mu.Lock()
	defer qp.Mu.Unlock()
	if qp.destroyed {
		return
	}
	p := &f.Packet
	info := p.Info()
	if info.Transport != transportOf(qp.Cfg.Type) {
		qp.s.ctr.inc(UnexpectedOpcode)
		return
	}
	switch qp.CurState {
	case verbs.QPSReset, verbs.QPSInit, verbs.QPSErr:
		qp.s.ctr.inc(QPNotReady)
		return
	}
	if qp.Cfg.Type == verbs.QPTypeUD {
		qp.s.ctr.inc(RcvdPkts)
		qp.udReceive(f)
		return
	}
	if f.SrcAddr().Unmap() != qp.peer {
		qp.s.ctr.inc(AddrMismatch)
		return
	}
	qp.s.ctr.inc(RcvdPkts)
	if qp.Cfg.Type == verbs.QPTypeUC {
		qp.resp.ucRequest(p)
		return
	}
	if info.Response {
		if qp.CurState == verbs.QPSRTR {
			qp.s.ctr.inc(QPNotReady)
			return
		}
		qp.handleResponse(p)
		return
	}
	qp.resp.request(p)
	if qp.resp.ackPending && !qp.ackQueued {
		qp.ackQueued = true
		qp.s.ackDue(qp)
	}
}

// transportOf maps a QP type to the opcodes it accepts.
func transportOf(t verbs.QPType) wire.Transport {
	switch t {
	case verbs.QPTypeUC:
		return wire.TransportUC
	case verbs.QPTypeUD:
		return wire.TransportUD
	}
	return wire.TransportRC
}

// request walks a request packet through the responder's checks in the
// order of IBTA Vol 1 §9.7.5.1 (and of rxe's responder states): CHK_PSN →
// CHK_OP_SEQ → CHK_OP_VALID → CHK_RESOURCE, then the opcode's own
// execution, which runs CHK_LENGTH and CHK_RKEY before a byte moves
// (respchecks.go). A failed check is answered by its NAK (respnak.go).
//
// Two places differ from rxe's order, on purpose: a SEND's (or WRITE with
// immediate's) receive WQE is taken after the length check, not at
// CHK_RESOURCE, so a malformed packet consumes no WQE; and a WRITE First's
// rkey is checked for the whole message before its packet length. Both
// sides of each pair are fatal NAKs; only a packet with two faults sees a
// different NAK code than rxe would send.
func (rs *responder) request(p *wire.Packet) {
	qp := rs.qp
	psn := p.BTH().PSN()
	c := rs.checkPSN(psn)
	if c != checkDuplicate && rs.stream.active {
		// Whatever this request brings follows the READ responses.
		rs.finishStream()
		if qp.CurState == verbs.QPSErr {
			return
		}
	}
	switch c {
	case checkPSNAhead:
		rs.nakSequenceError(psn)
		return
	case checkDuplicate:
		qp.s.ctr.inc(DuplicateRequest)
		rs.abandonStream()
		rs.duplicate(p, psn)
		return
	}
	info := p.Info()
	if c = rs.checkOpSeq(info); c == checkOK {
		if c = rs.checkOpValid(p, info); c == checkOK {
			c = rs.checkResource(info)
		}
	}
	if c != checkOK {
		rs.reject(psn, c)
		return
	}
	rs.execute(p, psn, info)
}

// execute runs a request that passed the checks common to every opcode.
func (rs *responder) execute(p *wire.Packet, psn uint32, info *wire.OpInfo) {
	switch info.Kind {
	case wire.KindSend:
		rs.send(p, psn, info)
	case wire.KindWrite:
		rs.write(p, psn, info)
	case wire.KindReadRequest:
		rs.read(p, psn)
	case wire.KindCmpSwap, wire.KindFetchAdd:
		rs.atomic(p, psn, info)
	case wire.KindAtomicWrite:
		rs.atomicWrite(p, psn)
	case wire.KindFlush:
		rs.flushRequest(p, psn)
	}
}

// advance accepts the packet: the expected PSN moves on.
func (rs *responder) advance(psn uint32, n int, ackReq bool) {
	if qp := rs.qp; qp.s.tracing() {
		qp.s.tracef(qp.Cfg.QPN, "resp", "psn %d accepted, expect %d next (msn %d, ack requested %v)", psn, wire.PSNAdd(psn, n), rs.msn, ackReq)
	}
	rs.epsn = wire.PSNAdd(psn, n)
	rs.nakSent = false
	if ackReq {
		if rs.ackPending {
			rs.qp.s.ctr.inc(AcksCoalesced)
		}
		rs.ackPending, rs.ackPSN = true, wire.PSNAdd(psn, n-1)
	}
}

func (rs *responder) send(p *wire.Packet, psn uint32, info *wire.OpInfo) {
	qp := rs.qp
	payload := p.Payload()
	if c := rs.checkLength(info, len(payload)); c != checkOK {
		rs.reject(psn, c)
		return
	}
	if info.First() {
		wr, ok := qp.Cfg.RQ.Pop()
		if !ok {
			rs.nakRNR(psn)
			return
		}
		rs.rwqe, rs.hasRWQE, rs.off = wr, true, 0
		rs.rwqeLen = memory.TotalLength(wr.SGL)
	}
	if uint64(rs.off+len(payload)) > rs.rwqeLen {
		// The message is longer than the receive buffer: the receive WQE
		// completes with LOC_LEN_ERR and the requester gets an invalid
		// request NAK.
		rs.nakInvalidRequestWQE(psn, verbs.WCLocLenErr)
		return
	}
	if len(payload) > 0 {
		if f := qp.Cfg.Memory.Scatter(qp.Cfg.PD, rs.rwqe.SGL, payload, rs.off); f != memory.Ok {
			rs.nakRemoteOperational(psn, verbs.WCLocProtErr)
			return
		}
	}
	rs.off += len(payload)
	if !info.Last() {
		rs.inMsg = msgSend
		rs.advance(psn, 1, p.BTH().AckReq())
		return
	}
	wc := verbs.WC{WRID: rs.rwqe.ID, Status: verbs.WCSuccess, Opcode: verbs.WCRecv, ByteLen: uint32(rs.off),
		QPN: qp.Cfg.QPN, SrcQP: qp.Attr.DestQPN}
	if info.Imm {
		wc.Imm, wc.Flags = p.ImmDt().Imm(), wc.Flags|verbs.WCFlagWithImm
	}
	if info.Inv {
		key := p.IETH().RKey()
		if f := qp.Cfg.Memory.Invalidate(qp.Cfg.PD, qp.Cfg.QPN, key); f != memory.Ok {
			rs.nakInvalidRequestWQE(psn, verbs.WCLocProtErr)
			return
		}
		wc.InvRKey, wc.Flags = key, wc.Flags|verbs.WCFlagWithInv
	}
	rs.finishMessage(psn, p.BTH().AckReq())
	qp.pushRecv(wc)
	if p.BTH().SE() {
		qp.Cfg.RecvCQ.Solicited()
	}
}

// finishMessage ends a message: MSN advances with the PSN.
func (rs *responder) finishMessage(psn uint32, ackReq bool) {
	rs.inMsg, rs.hasRWQE = msgNone, false
	rs.msn = wire.PSNAdd(rs.msn, 1)
	rs.advance(psn, 1, ackReq)
}

func (rs *responder) write(p *wire.Packet, psn uint32, info *wire.OpInfo) {
	qp := rs.qp
	payload := p.Payload()
	if info.First() {
		reth := p.RETH()
		rs.wva, rs.wrkey, rs.wlen, rs.off = reth.VA(), reth.RKey(), reth.DMALength(), 0
		if c := checkDMALength(rs.wlen); c != checkOK {
			rs.reject(psn, c)
			return
		}
		if f := rs.checkRKey(rs.wrkey, rs.wva, rs.wlen, memory.RemoteWrite); f != memory.Ok {
			rs.nakAccess(psn, f)
			return
		}
	}
	if c := rs.checkWriteLength(info, len(payload)); c != checkOK {
		rs.reject(psn, c)
		return
	}
	var rwqe verbs.RecvWR
	if info.Imm {
		// RDMA WRITE with immediate consumes a receive WQE: take it before
		// placing data, so an RNR NAK leaves nothing half done.
		wr, ok := qp.Cfg.RQ.Pop()
		if !ok {
			rs.nakRNR(psn)
			return
		}
		rwqe = wr
	}
	if len(payload) > 0 {
		va := rs.wva + uint64(rs.off)
		ref, f := qp.Cfg.Memory.CheckRemote(qp.Cfg.PD, qp.Cfg.QPN, rs.wrkey, va, uint32(len(payload)), memory.RemoteWrite)
		if f == memory.Ok {
			f = ref.Write(va, payload)
			ref.Release()
		}
		if f != memory.Ok {
			if info.Imm {
				rs.rwqe, rs.hasRWQE = rwqe, true
			}
			rs.nakAccess(psn, f)
			return
		}
	}
	rs.off += len(payload)
	if !info.Last() {
		rs.inMsg = msgWrite
		rs.advance(psn, 1, p.BTH().AckReq())
		return
	}
	rs.finishMessage(psn, p.BTH().AckReq())
	if info.Imm {
		wc := verbs.WC{WRID: rwqe.ID, Status: verbs.WCSuccess, Opcode: verbs.WCRecvRDMAWithImm, ByteLen: rs.wlen,
			Imm: p.ImmDt().Imm(), Flags: verbs.WCFlagWithImm, QPN: qp.Cfg.QPN, SrcQP: qp.Attr.DestQPN}
		qp.pushRecv(wc)
		if p.BTH().SE() {
			qp.Cfg.RecvCQ.Solicited()
		}
	}
}

// newResource takes the next responder resource, replacing the oldest.
func (rs *responder) newResource() *resource {
	r := &rs.res[rs.resNext]
	rs.resNext = (rs.resNext + 1) % len(rs.res)
	*r = resource{valid: true}
	return r
}

func (rs *responder) read(p *wire.Packet, psn uint32) {
	qp := rs.qp
	reth := p.RETH()
	va, rkey, n := reth.VA(), reth.RKey(), reth.DMALength()
	if c := checkDMALength(n); c != checkOK {
		rs.reject(psn, c)
		return
	}
	if f := rs.checkRKey(rkey, va, n, memory.RemoteRead); f != memory.Ok {
		rs.nakAccess(psn, f)
		return
	}
	npkts := 1
	if n > 0 {
		npkts = (int(n) + qp.mtu - 1) / qp.mtu
	}
	res := rs.newResource()
	res.first, res.last = psn, wire.PSNAdd(psn, npkts-1)
	res.va, res.rkey, res.length = va, rkey, n
	rs.msn = wire.PSNAdd(rs.msn, 1) // C9-148: MSN moves when the READ executes
	rs.advance(psn, npkts, false)
	rs.flushAck()
	rs.startStream(res, 0)
}

// readResponses sends the responses k to end-1 of a READ. Each packet
// reads memory afresh through the rkey, so a region deregistered meanwhile
// yields a remote access error NAK, never a stale byte; it then reports
// false.
func (rs *responder) readResponses(res *resource, k, end int) bool {
	qp := rs.qp
	mtu := qp.mtu
	qp.beginBatch()
	defer qp.flushBatch()
	npkts := int(wire.PSNDiff(res.last, res.first)) + 1
	for ; k < end; k++ {
		off := k * mtu
		n := min(mtu, int(res.length)-off)
		var h wire.Headers
		switch {
		case npkts == 1:
			h.BTH.Opcode = wire.RCReadResponseOnly
		case k == 0:
			h.BTH.Opcode = wire.RCReadResponseFirst
		case k == npkts-1:
			h.BTH.Opcode = wire.RCReadResponseLast
		default:
			h.BTH.Opcode = wire.RCReadResponseMiddle
		}
		psn := wire.PSNAdd(res.first, k)
		h.BTH.PSN = psn
		h.AETH = wire.AETHFields{Syndrome: rs.credits(), MSN: rs.msn}
		frame, payload := qp.startFrame(&h, n)
		if n > 0 {
			va := res.va + uint64(off)
			ref, f := qp.Cfg.Memory.CheckRemote(qp.Cfg.PD, qp.Cfg.QPN, res.rkey, va, uint32(n), memory.RemoteRead)
			if f == memory.Ok {
				f = ref.Read(va, payload)
				ref.Release()
			}
			if f != memory.Ok {
				rs.nakAccess(psn, f)
				return false
			}
		}
		if qp.s.tracing() {
			qp.s.tracef(qp.Cfg.QPN, "resp", "send %v psn=%d len=%d", h.BTH.Opcode, psn, n)
		}
		qp.emit(frame)
		qp.s.ctr.inc(ReadResponsesSent)
	}
	return true
}

func (rs *responder) atomic(p *wire.Packet, psn uint32, info *wire.OpInfo) {
	qp := rs.qp
	a := p.AtomicETH()
	va := a.VA()
	ref, f := qp.Cfg.Memory.CheckRemote(qp.Cfg.PD, qp.Cfg.QPN, a.RKey(), va, 8, memory.RemoteAtomic)
	if f != memory.Ok {
		rs.nakAccess(psn, f)
		return
	}
	var orig uint64
	if info.Kind == wire.KindCmpSwap {
		orig, f = ref.CompareSwap(va, a.Compare(), a.SwapAdd())
	} else {
		orig, f = ref.FetchAdd(va, a.SwapAdd())
	}
	ref.Release()
	if f != memory.Ok {
		rs.nakAccess(psn, f)
		return
	}
	res := rs.newResource()
	res.kind, res.first, res.last, res.orig = resAtomic, psn, psn, orig
	res.va, res.rkey = va, a.RKey()
	rs.msn = wire.PSNAdd(rs.msn, 1)
	rs.advance(psn, 1, false)
	rs.flushAck()
	rs.atomicAck(psn, orig)
}

func (rs *responder) atomicAck(psn uint32, orig uint64) {
	var h wire.Headers
	h.BTH.Opcode = wire.RCAtomicAck
	h.BTH.PSN = psn
	h.AETH = wire.AETHFields{Syndrome: rs.credits(), MSN: rs.msn}
	h.AtomicAck = orig
	frame, _ := rs.qp.startFrame(&h, 0)
	if qp := rs.qp; qp.s.tracing() {
		qp.s.tracef(qp.Cfg.QPN, "resp", "send ATOMIC Acknowledge psn=%d original=%#x", psn, orig)
	}
	rs.qp.emit(frame)
}

// duplicate answers a request whose PSN was already executed.
func (rs *responder) duplicate(p *wire.Packet, psn uint32) {
	qp := rs.qp
	info := p.Info()
	switch info.Kind {
	case wire.KindSend, wire.KindWrite:
		if qp.s.tracing() {
			qp.s.tracef(qp.Cfg.QPN, "resp", "duplicate %v psn=%d: re-ACK psn %d", p.Opcode(), psn, wire.PSNAdd(rs.epsn, -1))
		}
		rs.flushAck()
		rs.sendAck(rs.credits(), wire.PSNAdd(rs.epsn, -1))
	case wire.KindReadRequest:
		res := rs.findResource(psn, resRead)
		reth := p.RETH()
		if res == nil || reth.RKey() != res.rkey {
			qp.s.ctr.inc(ResourceMiss)
			if qp.s.tracing() {
				qp.s.tracef(qp.Cfg.QPN, "resp", "duplicate READ psn=%d: no responder resource holds it any more; dropped", psn)
			}
			return
		}
		// A retried READ may ask for a sub-range: the responses from
		// its PSN on, for the rest of the original request.
		k := int(wire.PSNDiff(psn, res.first))
		if reth.VA() != res.va+uint64(k*qp.mtu) {
			qp.s.ctr.inc(ResourceMiss)
			if qp.s.tracing() {
				qp.s.tracef(qp.Cfg.QPN, "resp", "duplicate READ psn=%d: VA %#x does not continue the original request; dropped", psn, reth.VA())
			}
			return
		}
		qp.s.ctr.inc(ReadReplays)
		if qp.s.tracing() {
			qp.s.tracef(qp.Cfg.QPN, "resp", "duplicate READ psn=%d: replay responses %d..%d", psn, psn, res.last)
		}
		rs.flushAck()
		rs.startStream(res, k)
	case wire.KindCmpSwap, wire.KindFetchAdd:
		res := rs.findResource(psn, resAtomic)
		if res == nil {
			qp.s.ctr.inc(ResourceMiss)
			return
		}
		qp.s.ctr.inc(AtomicReplays)
		rs.flushAck()
		rs.atomicAck(psn, res.orig)
	case wire.KindAtomicWrite, wire.KindFlush:
		rs.duplicateRespOnly(p, psn)
	}
}

func (rs *responder) findResource(psn uint32, kind resKind) *resource {
	for i := range rs.res {
		r := &rs.res[i]
		if r.valid && r.kind == kind && wire.PSNAfterOrEqual(psn, r.first) && wire.PSNAfterOrEqual(r.last, psn) {
			return r
		}
	}
	return nil
}

// credits is the syndrome of an ACK: the credit code for the free receive
// WQEs, or "unlimited" with an SRQ (whose WQEs are not this QP's to grant).
func (rs *responder) credits() wire.Syndrome {
	if rs.qp.Cfg.UsesSRQ {
		return wire.ACKSyndrome(wire.CreditsUnlimited)
	}
	return wire.ACKSyndrome(wire.CreditCode(rs.qp.Cfg.RQ.Len()))
}

// flushAck sends the coalesced ACK, if one is due.
func (rs *responder) flushAck() {
	if !rs.ackPending {
		return
	}
	rs.ackPending = false
	rs.sendAck(rs.credits(), rs.ackPSN)
}

// sendAck sends an Acknowledge packet with syndrome s for psn.
func (rs *responder) sendAck(s wire.Syndrome, psn uint32) {
	qp := rs.qp
	var h wire.Headers
	h.BTH.Opcode = wire.RCAck
	h.BTH.PSN = psn
	h.AETH = wire.AETHFields{Syndrome: s, MSN: rs.msn}
	frame, _ := qp.startFrame(&h, 0)
	if qp.s.tracing() {
		qp.s.tracef(qp.Cfg.QPN, "resp", "send %v psn=%d msn=%d", s, psn, rs.msn)
	}
	qp.emit(frame)
	if s.Type() == wire.AckTypeACK {
		qp.s.ctr.inc(AcksSent)
	}
}

// recordKeyFailure counts a failed rkey check against the connected peer,
// the QP's destination (memory.Table.KeyFailures).
func (qp *QP) recordKeyFailure() {
	qp.Cfg.Memory.RecordKeyFailure(memory.Peer{Addr: qp.Attr.AV.DGID.Unmap(), ID: qp.Attr.DestQPN})
}

// flush completes every receive WQE of the QP's own queue with
// WR_FLUSH_ERR (an SRQ's WQEs belong to the SRQ and stay).
func (rs *responder) flush() {
	qp := rs.qp
	rs.ackPending = false
	rs.stream.active = false
	rs.more.Stop()
	if rs.hasRWQE {
		rs.hasRWQE = false
		qp.pushRecv(verbs.WC{WRID: rs.rwqe.ID, Status: verbs.WCWRFlushErr, Opcode: verbs.WCRecv, QPN: qp.Cfg.QPN})
	}
	if qp.Cfg.UsesSRQ {
		return
	}
	for {
		wr, ok := qp.Cfg.RQ.Pop()
		if !ok {
			return
		}
		qp.pushRecv(verbs.WC{WRID: wr.ID, Status: verbs.WCWRFlushErr, Opcode: verbs.WCRecv, QPN: qp.Cfg.QPN})
	}
}
