package iwarp

import (
	"github.com/rnic/rnic/iwarp/wire"
	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
)

// The receive path: FPDUs from the stream are deframed (CRC checked),
// decoded, and dispatched by opcode. The responder places tagged Writes,
// reassembles untagged Sends into receive WQEs by (QN, MSN, MO), completes
// a receive WQE with each Immediate Data message, answers
// Read and Atomic Requests in order within IRD, and the requester places
// Read Responses into the READ's sink and takes Atomic Responses. Every
// violation is answered with a Terminate (terminate.go).

// rresp is an inbound Read or Atomic Request waiting for (or in) its
// response.
type rresp struct {
	rtr      bool // the RTR Read: not counted against IRD
	atomic   bool
	msn      uint32
	sinkSTag uint32
	sinkTO   uint64
	size     uint32
	srcSTag  uint32
	srcTO    uint64
	sent     uint32
	reqID    uint32
	orig     uint64
}

type responder struct {
	qp *QP
	// Queue 0: the Send being received.
	msn    uint32 // MSN of the message expected next
	active bool
	rwqe   verbs.RecvWR
	rlen   int
	got    int
	// Tagged: the length of the RDMA Write message being placed, and of
	// the last one complete (what an RDMA_WRITE_WITH_IMM's receive
	// completion reports).
	wlen, lastWrite int
	// Queue 1: Read and Atomic Requests.
	rrMSN uint32
	irq   []rresp
	irqN  int // entries counted against IRD
	// Queue 3: Atomic Responses sent and expected.
	atMSN uint32 // next MSN we send
	arMSN uint32 // next MSN we expect
}

func (rs *responder) init(qp *QP) {
	rs.qp = qp
	rs.connReset()
}

func (rs *responder) connReset() {
	rs.msn, rs.rrMSN, rs.atMSN, rs.arMSN = 1, 1, 1, 1
	rs.active = false
	rs.irq, rs.irqN = rs.irq[:0], 0
	rs.wlen, rs.lastWrite = 0, 0
}

func (rs *responder) reset() {
	rs.connReset()
	rs.rwqe = verbs.RecvWR{}
}

// flush completes the receive WQE in progress and every WQE of the QP's
// own queue with WR_FLUSH_ERR (an SRQ's WQEs belong to the SRQ and stay).
func (rs *responder) flush() {
	qp := rs.qp
	rs.irq, rs.irqN = rs.irq[:0], 0
	if rs.active {
		rs.active = false
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

// input takes bytes from the stream.
func (qp *QP) input(p []byte) {
	switch qp.cm {
	case cmAwaitReply:
		qp.handshake(p)
		return
	case cmConnected, cmClosing:
	default:
		return
	}
	qp.s.ctr.add(RcvdBytes, len(p))
	for len(p) > 0 && qp.conn != nil && qp.dfr != nil {
		d, n, err := qp.dfr.Next(p)
		p = p[n:]
		if err == wire.ErrIncomplete {
			break
		}
		if err != nil {
			// MPA framing is lost: nothing after this can be trusted.
			qp.s.ctr.inc(FramingErr)
			we, _ := err.(wire.Error)
			qp.s.ctr.incWire(we)
			if qp.CurState != verbs.QPSErr {
				code, _ := we.Terminate()
				qp.sendTerminate(termInfo{code: code}, err)
			}
			return
		}
		if qp.CurState == verbs.QPSErr {
			qp.s.ctr.inc(DroppedInError)
			continue
		}
		if !d.CRCOK {
			qp.s.ctr.inc(CRCErr)
			qp.s.ctr.incWire(wire.ErrBadCRC)
			qp.sendTerminate(termInfo{code: wire.TermLLPCRC}, wire.ErrBadCRC)
			continue
		}
		qp.receive(d.ULPDU)
	}
	qp.progress()
}

// receive decodes and dispatches one ULPDU.
func (qp *QP) receive(ulpdu []byte) {
	var seg wire.Segment
	if err := seg.Decode(ulpdu); err != nil {
		we, _ := err.(wire.Error)
		qp.s.ctr.incWire(we)
		code, ok := we.Terminate()
		if !ok {
			code = wire.TermRDMAPOpUnspecified
		}
		qp.sendTerminate(termInfo{code: code, seg: ulpdu}, err)
		return
	}
	qp.s.ctr.inc(RcvdFPDUs)
	op := seg.Opcode()
	if qp.rtrWait && op != wire.OpTerminate {
		qp.receiveRTR(&seg)
		return
	}
	switch op {
	case wire.OpWrite:
		qp.resp.write(&seg)
	case wire.OpReadRequest:
		qp.resp.readRequest(&seg)
	case wire.OpReadResponse:
		qp.req.readResponse(&seg)
	case wire.OpSend, wire.OpSendInvalidate, wire.OpSendSE, wire.OpSendSEInvalidate:
		qp.resp.send(&seg)
	case wire.OpTerminate:
		qp.receiveTerminate(&seg)
	case wire.OpAtomicRequest:
		if qp.s.cfg.NoAtomics {
			qp.unexpected(&seg)
			return
		}
		qp.resp.atomicRequest(&seg)
	case wire.OpAtomicResponse:
		qp.req.atomicResponse(&seg)
	case wire.OpImmediate, wire.OpImmediateSE:
		if qp.s.cfg.NoImmediate {
			qp.unexpected(&seg)
			return
		}
		qp.resp.send(&seg)
	default:
		qp.unexpected(&seg)
	}
}

func (qp *QP) unexpected(seg *wire.Segment) {
	qp.s.ctr.inc(UnexpectedOpcode)
	qp.sendTerminate(termInfo{code: wire.TermRDMAPUnexpectedOpcode, seg: seg.Bytes()}, errUnexpected)
}

// receiveRTR checks the responder's first FPDU against the negotiated
// RTR (RFC 6581 §9.2). The zero-length RTR Write is not an access check.
func (qp *QP) receiveRTR(seg *wire.Segment) {
	h := seg.DDP()
	ok := false
	switch qp.rtrRecv {
	case rtrWrite:
		ok = seg.Opcode() == wire.OpWrite && len(seg.Payload()) == 0 && h.Last()
	case rtrRead:
		ok = seg.Opcode() == wire.OpReadRequest && seg.ReadRequest().Size() == 0 && h.MSN() == qp.resp.rrMSN
	case rtrSend:
		ok = seg.Opcode() == wire.OpSend && len(seg.Payload()) == 0 && h.Last() && h.MO() == 0 && h.MSN() == qp.resp.msn
	}
	if !ok {
		qp.s.ctr.inc(NoMatchingRTR)
		qp.sendTerminate(termInfo{code: wire.TermLLPNoMatchingRTR}, errNoRTR)
		return
	}
	qp.s.ctr.inc(RTRRcvd)
	switch qp.rtrRecv {
	case rtrRead:
		rr := seg.ReadRequest()
		qp.resp.rrMSN++
		qp.resp.irq = append(qp.resp.irq, rresp{rtr: true, msn: h.MSN(), sinkSTag: rr.SinkSTag(), sinkTO: rr.SinkTO()})
	case rtrSend:
		// The Send RTR takes its MSN on queue 0 but no receive WQE, and
		// completes nothing: it never reaches the ULP.
		qp.resp.msn++
	}
	qp.rtrWait = false
	if qp.s.tracing() {
		qp.s.tracef(qp.Cfg.QPN, "rx", "RTR (zero-length %v) received: full operation", qp.rtrRecv)
	}
	qp.established()
}

// tagged maps a memory fault on a tagged buffer to its DDP Terminate code
// (RFC 5041 §7.2; siw_tagged_error: DDP has no access-rights code, so an
// access violation is reported as an invalid STag).
func (qp *QP) taggedFault(f memory.Fault) wire.TermCode {
	qp.recordKeyFailure()
	switch f {
	case memory.OutOfBounds:
		qp.s.ctr.inc(BaseBounds)
		return wire.TermDDPTaggedBaseBounds
	case memory.BadPD, memory.BadQP:
		qp.s.ctr.inc(STagNotAssociated)
		return wire.TermDDPTaggedSTagNotAssoc
	case memory.NoAccess:
		qp.s.ctr.inc(AccessViolation)
		return wire.TermDDPTaggedInvalidSTag
	}
	qp.s.ctr.inc(BadSTag)
	return wire.TermDDPTaggedInvalidSTag
}

// recordKeyFailure counts a failed STag check against the peer at the other
// end of the connection (memory.Table.KeyFailures).
func (qp *QP) recordKeyFailure() {
	qp.Cfg.Memory.RecordKeyFailure(memory.Peer{Addr: qp.remote.Addr().Unmap(), ID: uint32(qp.remote.Port())})
}

// remoteFault maps a memory fault on a Read or Atomic Request's source to
// its RDMAP remote protection code (RFC 5040 §4.8).
func (qp *QP) remoteFault(f memory.Fault) wire.TermCode {
	qp.recordKeyFailure()
	switch f {
	case memory.OutOfBounds, memory.Misaligned:
		qp.s.ctr.inc(BaseBounds)
		return wire.TermRDMAPBaseBounds
	case memory.BadPD, memory.BadQP:
		qp.s.ctr.inc(STagNotAssociated)
		return wire.TermRDMAPSTagNotAssociated
	case memory.NoAccess:
		qp.s.ctr.inc(AccessViolation)
		return wire.TermRDMAPAccessRights
	}
	qp.s.ctr.inc(BadSTag)
	return wire.TermRDMAPInvalidSTag
}

// write places an RDMA Write segment.
func (rs *responder) write(seg *wire.Segment) {
	qp := rs.qp
	payload := seg.Payload()
	h := seg.DDP()
	rs.wlen += len(payload)
	if h.Last() {
		rs.lastWrite, rs.wlen = rs.wlen, 0
	}
	if len(payload) == 0 {
		return // a zero-length Write checks nothing (IBTA C9-88; the RTR)
	}
	if !qp.Attr.AccessFlags.Has(memory.RemoteWrite) {
		qp.s.ctr.inc(AccessViolation)
		qp.sendTerminate(termInfo{code: wire.TermDDPTaggedInvalidSTag, seg: seg.Bytes()}, errAccess)
		return
	}
	ref, f := qp.Cfg.Memory.CheckRemote(qp.Cfg.PD, qp.Cfg.QPN, h.STag(), h.TO(), uint32(len(payload)), memory.RemoteWrite)
	if f == memory.Ok {
		f = ref.Write(h.TO(), payload)
		ref.Release()
	}
	if f != memory.Ok {
		qp.sendTerminate(termInfo{code: qp.taggedFault(f), seg: seg.Bytes()}, errFault(f))
	}
}

// send reassembles a Send into the current receive WQE. An Immediate
// Data message (RFC 7306) is an untagged message of queue 0 too: it takes
// the next MSN and a receive WQE, places nothing, and completes the WQE
// with WCFlagWithImm and the imm_data from the low-order 4 octets of its
// Immediate Data field. With the immAfterWrite flag (RDMA_WRITE_WITH_IMM)
// the completion is WCRecvRDMAWithImm and its ByteLen the length of the
// RDMA Write message that preceded it; without it (SEND_WITH_IMM, or a
// peer that sets no flags) WCRecv with ByteLen 0.
func (rs *responder) send(seg *wire.Segment) {
	h := seg.DDP()
	imm := seg.Info().Body == wire.BodyImmediate
	if !rs.admit(seg, imm) || !rs.place(seg) || !h.Last() {
		return
	}
	rs.completeSend(seg, imm)
}

// untaggedFault ends the connection with a Terminate for seg (code,
// counted as c) and, if a receive WQE was taken, completes it with st
// (unless st is a flush: the WQE is flushed with the others).
func (rs *responder) untaggedFault(seg *wire.Segment, code wire.TermCode, c Counter, st verbs.WCStatus) {
	qp := rs.qp
	qp.s.ctr.inc(c)
	if rs.active && st != verbs.WCWRFlushErr {
		rs.active = false
		qp.pushRecv(verbs.WC{WRID: rs.rwqe.ID, Status: st, Opcode: verbs.WCRecv, QPN: qp.Cfg.QPN})
	}
	qp.sendTerminate(termInfo{code: code, seg: seg.Bytes()}, errUntagged(code))
}

// admit checks seg's MSN and MO against the message being reassembled,
// and for a message's first segment takes a receive WQE.
func (rs *responder) admit(seg *wire.Segment, imm bool) bool {
	qp := rs.qp
	h := seg.DDP()
	if h.MSN() != rs.msn {
		rs.untaggedFault(seg, wire.TermDDPUntaggedMSNRange, MSNRange, verbs.WCWRFlushErr)
		return false
	}
	if imm && (rs.active || h.MO() != 0 || !h.Last()) {
		// One segment, never inside a Send being reassembled.
		rs.untaggedFault(seg, wire.TermDDPUntaggedInvalidMO, BadMO, verbs.WCWRFlushErr)
		return false
	}
	if rs.active {
		if int(h.MO()) != rs.got {
			rs.untaggedFault(seg, wire.TermDDPUntaggedInvalidMO, BadMO, verbs.WCWRFlushErr)
			return false
		}
		return true
	}
	if h.MO() != 0 {
		rs.untaggedFault(seg, wire.TermDDPUntaggedInvalidMO, BadMO, verbs.WCWRFlushErr)
		return false
	}
	wr, ok := qp.Cfg.RQ.Pop()
	if !ok {
		rs.untaggedFault(seg, wire.TermDDPUntaggedNoBuffer, NoRecvBuf, verbs.WCWRFlushErr)
		return false
	}
	rs.active, rs.rwqe, rs.got = true, wr, 0
	rs.rlen = int(memory.TotalLength(wr.SGL))
	return true
}

// place scatters seg's payload into the receive WQE at the message offset
// reached.
func (rs *responder) place(seg *wire.Segment) bool {
	qp := rs.qp
	payload := seg.Payload()
	if rs.got+len(payload) > rs.rlen {
		rs.untaggedFault(seg, wire.TermDDPUntaggedTooLong, TooLong, verbs.WCLocLenErr)
		return false
	}
	if len(payload) > 0 {
		if f := qp.Cfg.Memory.Scatter(qp.Cfg.PD, rs.rwqe.SGL, payload, rs.got); f != memory.Ok {
			rs.untaggedFault(seg, wire.TermDDPLocalCatastrophic, LocalProtErr, verbs.WCLocProtErr)
			return false
		}
	}
	rs.got += len(payload)
	return true
}

// completeSend completes the receive WQE with seg, a message's last
// segment: its immediate data, the STag it invalidates.
func (rs *responder) completeSend(seg *wire.Segment, imm bool) {
	qp := rs.qp
	h := seg.DDP()
	info := seg.Info()
	wc := verbs.WC{WRID: rs.rwqe.ID, Opcode: verbs.WCRecv, ByteLen: uint32(rs.got), QPN: qp.Cfg.QPN}
	rs.active = false
	rs.msn++
	if imm {
		d := seg.Immediate().Data()
		wc.Flags, wc.Imm = verbs.WCFlagWithImm, uint32(d)
		if immFlags(d)&immAfterWrite != 0 {
			wc.Opcode, wc.ByteLen = verbs.WCRecvRDMAWithImm, uint32(rs.lastWrite)
		}
		qp.s.ctr.inc(ImmediateRcvd)
	}
	if info.Invalidate {
		stag := h.InvalidateSTag()
		if f := qp.Cfg.Memory.Invalidate(qp.Cfg.PD, qp.Cfg.QPN, stag); f != memory.Ok {
			qp.s.ctr.inc(InvalidateErr)
			code := wire.TermRDMAPOpCannotInvalidate
			if f == memory.BadPD || f == memory.BadQP {
				code = wire.TermRDMAPProtCannotInvalidate
			}
			wc.Status = verbs.WCLocProtErr
			qp.pushRecv(wc)
			qp.sendTerminate(termInfo{code: code, seg: seg.Bytes()}, errFault(f))
			return
		}
		wc.Flags |= verbs.WCFlagWithInv
		wc.InvRKey = stag
	}
	qp.pushRecv(wc)
	if info.Solicited {
		qp.Cfg.RecvCQ.Solicited()
	}
}

// checkQ1 checks a Read or Atomic Request's untagged fields and the IRD.
func (rs *responder) checkQ1(seg *wire.Segment) bool {
	qp := rs.qp
	h := seg.DDP()
	var code wire.TermCode
	var c Counter
	switch {
	case h.MSN() != rs.rrMSN:
		code, c = wire.TermDDPUntaggedMSNRange, MSNRange
	case h.MO() != 0 || !h.Last():
		code, c = wire.TermDDPUntaggedInvalidMO, BadMO
	case rs.irqN >= qp.ird:
		// siw: RDMAP, remote operation, catastrophic (stream).
		code, c = wire.TermRDMAPCatastrophicStream, IRDExceeded
	default:
		rs.rrMSN++
		return true
	}
	qp.s.ctr.inc(c)
	qp.sendTerminate(termInfo{code: code, seg: seg.Bytes()}, errUntagged(code))
	return false
}

// readRequest queues an RDMA Read Request after checking its source.
func (rs *responder) readRequest(seg *wire.Segment) {
	qp := rs.qp
	if !rs.checkQ1(seg) {
		return
	}
	rr := seg.ReadRequest()
	e := rresp{msn: seg.DDP().MSN(), sinkSTag: rr.SinkSTag(), sinkTO: rr.SinkTO(), size: rr.Size(),
		srcSTag: rr.SourceSTag(), srcTO: rr.SourceTO()}
	if e.size > 0 {
		f := memory.NoAccess
		if qp.Attr.AccessFlags.Has(memory.RemoteRead) {
			var ref memory.Ref
			ref, f = qp.Cfg.Memory.CheckRemote(qp.Cfg.PD, qp.Cfg.QPN, e.srcSTag, e.srcTO, e.size, memory.RemoteRead)
			ref.Release()
		}
		if f != memory.Ok {
			qp.sendTerminate(termInfo{code: qp.remoteFault(f), seg: seg.Bytes()}, errFault(f))
			return
		}
	}
	qp.s.ctr.inc(ReadRequestsRcvd)
	rs.irq = append(rs.irq, e)
	rs.irqN++
}

// atomicRequest executes an Atomic Request (RFC 7306 §5) and queues its
// response behind the responses already owed.
func (rs *responder) atomicRequest(seg *wire.Segment) {
	qp := rs.qp
	if !rs.checkQ1(seg) {
		return
	}
	a := seg.AtomicRequest()
	e := rresp{atomic: true, msn: seg.DDP().MSN(), reqID: a.RequestID()}
	f := memory.NoAccess
	if !a.Op().Valid() {
		qp.s.ctr.inc(UnexpectedOpcode)
		qp.sendTerminate(termInfo{code: wire.TermRDMAPOpUnspecified, seg: seg.Bytes()}, errUnexpected)
		return
	}
	if qp.Attr.AccessFlags.Has(memory.RemoteAtomic) {
		var ref memory.Ref
		ref, f = qp.Cfg.Memory.CheckRemote(qp.Cfg.PD, qp.Cfg.QPN, a.STag(), a.TO(), 8, memory.RemoteAtomic)
		if f == memory.Ok {
			e.orig, f = atomicOp(&ref, a)
			ref.Release()
		}
	}
	if f != memory.Ok {
		qp.sendTerminate(termInfo{code: qp.remoteFault(f), seg: seg.Bytes()}, errFault(f))
		return
	}
	qp.s.ctr.inc(AtomicsRcvd)
	rs.irq = append(rs.irq, e)
	rs.irqN++
}

// atomicOp performs an RFC 7306 atomic on the word at a.TO(). A FetchAdd
// mask marks field boundaries (no carry out of a bit set in it; zero is a
// plain 64-bit add); CmpSwap compares the bits of the compare mask and
// swaps the bits of the swap mask; Swap swaps the bits of its mask.
func atomicOp(ref *memory.Ref, a wire.AtomicRequest) (uint64, memory.Fault) {
	va := a.TO()
	switch {
	case a.Op() == wire.AtomicFetchAdd && a.AddSwapMask() == 0:
		return ref.FetchAdd(va, a.AddSwapData())
	case a.Op() == wire.AtomicCmpSwap && a.AddSwapMask() == ^uint64(0) && a.CompareMask() == ^uint64(0):
		return ref.CompareSwap(va, a.CompareData(), a.AddSwapData())
	}
	old, f := ref.CompareSwap(va, 0, 0) // reads the word
	for f == memory.Ok {
		var nv uint64
		switch a.Op() {
		case wire.AtomicFetchAdd:
			nv = partitionedAdd(old, a.AddSwapData(), a.AddSwapMask())
		case wire.AtomicSwap:
			m := a.AddSwapMask()
			nv = old&^m | a.AddSwapData()&m
		case wire.AtomicCmpSwap:
			nv = old
			if (old^a.CompareData())&a.CompareMask() == 0 {
				m := a.AddSwapMask()
				nv = old&^m | a.AddSwapData()&m
			}
		}
		var got uint64
		got, f = ref.CompareSwap(va, old, nv)
		if got == old {
			return old, f
		}
		old = got
	}
	return 0, f
}

// partitionedAdd adds b to a bit by bit, dropping the carry out of every
// bit set in boundaries.
func partitionedAdd(a, b, boundaries uint64) uint64 {
	var r, carry uint64
	for i := range 64 {
		x, y := a>>i&1, b>>i&1
		r |= (x ^ y ^ carry) << i
		carry = x&y | carry&(x^y)
		if boundaries>>i&1 != 0 {
			carry = 0
		}
	}
	return r
}

// emit frames the next FPDU of the oldest response owed; false when none.
func (rs *responder) emit() bool {
	qp := rs.qp
	if len(rs.irq) == 0 {
		return false
	}
	e := &rs.irq[0]
	var h wire.Headers
	if e.atomic {
		h.DDP = wire.DDPFields{Opcode: wire.OpAtomicResponse, Last: true, QN: wire.QNAtomicResponse, MSN: rs.atMSN}
		h.AtomicResponse = wire.AtomicResponseFields{RequestID: e.reqID, OriginalValue: e.orig}
		rs.atMSN++
		qp.buildHeaders(&h)
		qp.appendFPDU(nil)
		rs.pop()
		return true
	}
	chunk := min(int(e.size-e.sent), qp.maxULPDU-wire.DDPTaggedLen)
	payload := qp.payload[:chunk]
	if chunk > 0 {
		// Re-check the source for every FPDU: a deregistration between
		// two FPDUs takes effect at once, as a hardware NIC's DMA would.
		ref, f := qp.Cfg.Memory.CheckRemote(qp.Cfg.PD, qp.Cfg.QPN, e.srcSTag, e.srcTO+uint64(e.sent), uint32(chunk), memory.RemoteRead)
		if f == memory.Ok {
			f = ref.Read(e.srcTO+uint64(e.sent), payload)
			ref.Release()
		}
		if f != memory.Ok {
			qp.sendTerminate(termInfo{code: qp.remoteFault(f), rreq: e}, errFault(f))
			return false
		}
	}
	h.DDP = wire.DDPFields{Opcode: wire.OpReadResponse, STag: e.sinkSTag, TO: e.sinkTO + uint64(e.sent),
		Last: e.sent+uint32(chunk) == e.size}
	qp.buildHeaders(&h)
	qp.appendFPDU(payload)
	qp.s.ctr.inc(ReadResponsesSent)
	e.sent += uint32(chunk)
	if e.sent == e.size {
		rs.pop()
	}
	return true
}

func (rs *responder) pop() {
	if !rs.irq[0].rtr {
		rs.irqN--
	}
	n := copy(rs.irq, rs.irq[1:])
	rs.irq = rs.irq[:n]
}

// readResponse places a Read Response segment into the sink of the Read
// Request at the head of the ORQ (one sink SGE of a READ), checking that
// it is that request's sink. The READ is done with its last request's.
func (r *requester) readResponse(seg *wire.Segment) {
	qp := r.qp
	if len(r.orq) == 0 {
		qp.unexpected(seg)
		return
	}
	h := seg.DDP()
	payload := seg.Payload()
	o := &r.orq[0]
	if o.rtr {
		if len(payload) != 0 || !h.Last() {
			qp.s.ctr.inc(BaseBounds)
			qp.sendTerminate(termInfo{code: wire.TermDDPTaggedBaseBounds, seg: seg.Bytes()}, errFault(memory.OutOfBounds))
			return
		}
		r.popORQ()
		return
	}
	w := r.slot(o.idx)
	if w.wr.Opcode != verbs.WRRDMARead {
		qp.unexpected(seg)
		return
	}
	sink := o.sink
	if len(payload) > 0 {
		var code wire.TermCode
		switch {
		case h.STag() != sink.LKey:
			qp.s.ctr.inc(BadSTag)
			code = wire.TermDDPTaggedInvalidSTag
		case h.TO() != sink.Addr+uint64(o.rcvd) || o.rcvd+len(payload) > int(sink.Length):
			qp.s.ctr.inc(BaseBounds)
			code = wire.TermDDPTaggedBaseBounds
		}
		if code == 0 {
			ref, f := qp.Cfg.Memory.CheckLocal(qp.Cfg.PD, sink.LKey, h.TO(), uint32(len(payload)), memory.LocalWrite)
			if f == memory.Ok {
				f = ref.Write(h.TO(), payload)
				ref.Release()
			}
			if f != memory.Ok {
				qp.s.ctr.inc(LocalProtErr)
				w.failed, w.status = true, verbs.WCLocProtErr
				code = wire.TermDDPLocalCatastrophic
			}
		}
		if code != 0 {
			qp.sendTerminate(termInfo{code: code, seg: seg.Bytes()}, errUntagged(code))
			return
		}
		o.rcvd += len(payload)
		w.rcvd += len(payload)
	}
	if !h.Last() {
		return
	}
	if o.rcvd != int(sink.Length) {
		qp.s.ctr.inc(BaseBounds)
		w.failed, w.status = true, verbs.WCRemOpErr
		qp.sendTerminate(termInfo{code: wire.TermDDPTaggedBaseBounds, seg: seg.Bytes()}, errUntagged(wire.TermDDPTaggedBaseBounds))
		return
	}
	w.done = o.last
	r.popORQ()
	r.rdOut--
}

// atomicResponse completes the atomic at the head of the ORQ.
func (r *requester) atomicResponse(seg *wire.Segment) {
	qp := r.qp
	h := seg.DDP()
	rs := &qp.resp
	switch {
	case h.MSN() != rs.arMSN:
		qp.s.ctr.inc(MSNRange)
		qp.sendTerminate(termInfo{code: wire.TermDDPUntaggedMSNRange, seg: seg.Bytes()}, errUntagged(wire.TermDDPUntaggedMSNRange))
		return
	case len(r.orq) == 0 || r.orq[0].rtr:
		qp.unexpected(seg)
		return
	}
	w := r.slot(r.orq[0].idx)
	a := seg.AtomicResponse()
	if !w.rdAtomic || w.wr.Opcode == verbs.WRRDMARead || a.RequestID() != w.reqID {
		qp.unexpected(seg)
		return
	}
	rs.arMSN++
	if f := qp.putAtomicResult(w, a.OriginalValue()); f != memory.Ok {
		qp.s.ctr.inc(LocalProtErr)
		w.failed, w.status = true, verbs.WCLocProtErr
	}
	w.done = true
	r.popORQ()
	r.rdOut--
}
