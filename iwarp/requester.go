package iwarp

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/rnic/rnic/iwarp/wire"
	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/transport/stream"
)

// The requester turns send WQEs into RDMAP messages: Sends and Immediate
// Data on untagged queue 0, RDMA Writes tagged to the peer's STag (an
// RDMA_WRITE_WITH_IMM's followed by its Immediate Data), Read and Atomic
// Requests on queue 1. Messages are cut into FPDUs that fit one TCP segment. A
// SEND or WRITE is done once the stream accepted its last FPDU (siw's
// local completion); a READ or atomic once its response arrived. WRs
// retire (complete) in send-queue order. The ORD limit bounds outstanding
// Read and Atomic Requests, and a fenced WR waits until none is outstanding.
//
// An RDMAP Read Request names one Data Sink STag and Tagged Offset, so a
// READ with several sink SGEs goes out as one Read Request per SGE, as
// iWARP providers do it: sink STag and TO are the SGE's lkey (an MR's
// STag) and address, the source is the WR's rkey at the remote address
// plus the lengths of the SGEs before it, the size is the SGE's length.
// Zero-length SGEs are skipped; a zero-length READ is one zero-length Read
// Request as before. Each request counts against ORD: when they cannot all
// be outstanding at once the rest follow as responses come back, and the
// WRs behind wait. The WR completes when its last response is placed.

// swqe is a send WQE.
type swqe struct {
	wr       verbs.SendWR
	sgl      []verbs.SGE
	inline   []byte
	isInline bool
	length   int
	sent     int  // payload bytes framed so far
	started  bool // first FPDU framed (MSN assigned)
	framed   bool // every FPDU framed
	txEnd    uint64
	done     bool
	rdAtomic bool
	local    bool
	msn      uint32
	reqID    uint32
	rcvd     int  // READ: response bytes placed
	part     int  // READ: index of the sink SGE whose Read Request is next
	wdone    bool // RDMA_WRITE_WITH_IMM: the Write is framed, the Immediate Data is next
	failed   bool
	status   verbs.WCStatus
}

type orqEntry struct {
	idx  uint64 // send queue index
	rtr  bool   // the RTR Read: no WQE
	sink verbs.SGE
	rcvd int  // READ: bytes of this request's response placed
	last bool // READ: the WR's last Read Request
}

type requester struct {
	qp         *QP
	sq         []swqe
	head, next uint64 // oldest unretired, next to frame
	tail       uint64
	sendMSN    uint32 // next MSN on queue 0
	rrMSN      uint32 // next MSN on queue 1
	orq        []orqEntry
	rdOut      int // outstanding READs and atomics (the RTR not counted)
	atomicID   uint32
}

// Errors PostSend returns.
var (
	ErrSendQueueFull = fmt.Errorf("iwarp: send queue: %w", verbs.ErrQueueFull)
	ErrTooManySGE    = errors.New("iwarp: too many SGEs")
	ErrInline        = errors.New("iwarp: inline data")
	// ErrNoORD: a READ or atomic on a connection whose ORD is 0.
	ErrNoORD = errors.New("iwarp: ORD is 0: no RDMA READ or atomic possible")
	// ErrImmPayload: a SEND_WITH_IMM with a payload. RFC 7306 Immediate
	// Data carries no payload, and a Send followed by Immediate Data would
	// consume two receive WQEs at the peer: only a zero-length
	// SEND_WITH_IMM maps onto the wire.
	ErrImmPayload = fmt.Errorf("%w: SEND_WITH_IMM with a payload (iWARP Immediate Data carries none)", ErrUnsupported)
)

func (r *requester) init(qp *QP) {
	r.qp = qp
	n := max(int(qp.Cfg.Cap.MaxSendWR), 1)
	r.sq = make([]swqe, n)
	for i := range r.sq {
		r.sq[i].sgl = make([]verbs.SGE, 0, max(int(qp.Cfg.Cap.MaxSendSGE), 1))
	}
	r.connReset()
}

// connReset starts the per-connection sequence numbers.
func (r *requester) connReset() {
	r.sendMSN, r.rrMSN, r.atomicID = 1, 1, 0
	r.orq = r.orq[:0]
	r.rdOut = 0
}

func (r *requester) reset() {
	sq, qp, orq := r.sq, r.qp, r.orq
	*r = requester{qp: qp, sq: sq, orq: orq}
	r.connReset()
}

func (r *requester) slot(i uint64) *swqe { return &r.sq[i%uint64(len(r.sq))] }

// PostSend implements verbs.Engine.
func (qp *QP) PostSend(wr *verbs.SendWR) error {
	qp.Mu.Lock()
	defer qp.unlock()
	r := &qp.req
	if qp.destroyed {
		return fmt.Errorf("iwarp: QP %#x destroyed", qp.Cfg.QPN)
	}
	if qp.CurState == verbs.QPSErr {
		qp.pushSend(verbs.WC{WRID: wr.ID, Status: verbs.WCWRFlushErr, Opcode: wr.Opcode.CompletionOpcode(), QPN: qp.Cfg.QPN})
		return nil
	}
	if qp.CurState != verbs.QPSRTS {
		return fmt.Errorf("iwarp: post send in %v: %w", qp.CurState, verbs.ErrInvalidState)
	}
	w0 := swqe{}
	switch wr.Opcode {
	case verbs.WRSend, verbs.WRSendWithInv, verbs.WRRDMAWrite, verbs.WRLocalInv, verbs.WRBindMW:
	case verbs.WRSendWithImm, verbs.WRRDMAWriteWithImm:
		if qp.s.cfg.NoImmediate {
			return fmt.Errorf("%w: %v (RFC 7306 disabled)", ErrUnsupported, wr.Opcode)
		}
	case verbs.WRRDMARead:
		w0.rdAtomic = true
	case verbs.WRAtomicCmpSwp, verbs.WRAtomicFetchAdd:
		if qp.s.cfg.NoAtomics {
			return fmt.Errorf("%w: atomics (RFC 7306 disabled)", ErrUnsupported)
		}
		w0.rdAtomic = true
	default:
		return fmt.Errorf("%w: %v on iWARP", ErrUnsupported, wr.Opcode)
	}
	if w0.rdAtomic && qp.ord == 0 {
		return ErrNoORD
	}
	if r.tail-r.head >= uint64(len(r.sq)) {
		return ErrSendQueueFull
	}
	w := r.slot(r.tail)
	if len(wr.SGL) > cap(w.sgl) {
		return ErrTooManySGE
	}
	sgl, inl := w.sgl[:0], w.inline[:0]
	w0.wr, w0.sgl, w0.inline = *wr, append(sgl, wr.SGL...), inl
	w0.wr.SGL = w0.sgl
	w0.length = int(memory.TotalLength(w0.sgl))
	switch wr.Opcode {
	case verbs.WRAtomicCmpSwp, verbs.WRAtomicFetchAdd:
		w0.length = 8
	case verbs.WRLocalInv, verbs.WRBindMW:
		w0.local = true
	}
	if wr.Flags&verbs.SendInline != 0 && !w0.local && !w0.rdAtomic {
		src := wr.Inline
		if src == nil {
			src = make([]byte, w0.length)
			if _, f := qp.Cfg.Memory.Gather(qp.Cfg.PD, w0.sgl, src); f != memory.Ok {
				return fmt.Errorf("%w: %v", ErrInline, f)
			}
		}
		w0.length = len(src)
		w0.inline = append(w0.inline, src...)
		w0.isInline = true
	}
	if wr.Opcode == verbs.WRSendWithImm && w0.length != 0 {
		return ErrImmPayload
	}
	*w = w0
	r.tail++
	qp.progress()
	return nil
}

// progress frames what may be sent now and writes it: a pending RTR
// first, then Read and Atomic Responses (the peer waits on them), then the
// send queue. It then retires finished WRs.
func (qp *QP) progress() {
	if qp.conn != nil && qp.cm == cmConnected && qp.CurState == verbs.QPSRTS {
		for !qp.blocked && qp.cm == cmConnected && qp.CurState == verbs.QPSRTS {
			if len(qp.tx) >= txBatch {
				qp.flushTx()
				continue
			}
			if qp.rtrSend != rtrNone {
				qp.sendRTR()
				continue
			}
			if qp.rtrWait {
				break
			}
			if qp.resp.emit() {
				continue
			}
			if !qp.req.emit() {
				break
			}
		}
		qp.flushTx()
	}
	qp.req.retire()
}

// txBatch is how many FPDU octets progress gathers before it writes.
const txBatch = 64 << 10

// appendFPDU frames one ULPDU (qp.hdr ‖ payload) into tx.
func (qp *QP) appendFPDU(payload []byte) {
	n := len(qp.hdr) + len(payload)
	wl := wire.FramedLen(qp.txFraming, qp.txOff, n)
	qp.tx = wire.AppendFPDU(qp.tx, qp.txFraming, qp.txOff, qp.hdr, payload)
	if qp.records != nil {
		qp.txEnds = append(qp.txEnds, len(qp.tx))
	}
	qp.txOff += uint32(wl)
	qp.txTotal += uint64(wl)
	qp.s.ctr.inc(SentFPDUs)
}

// buildHeaders encodes h into qp.hdr.
func (qp *QP) buildHeaders(h *wire.Headers) {
	qp.hdr = wire.AppendHeaders(qp.hdr[:0], h)
}

// flushTx writes the framed FPDUs, each one a record when the stream
// keeps records whole in segments. The stream takes all or nothing; when
// it refuses, the QP waits for the writable callback.
func (qp *QP) flushTx() {
	if qp.conn == nil {
		return
	}
	if len(qp.tx) > 0 && !qp.blocked {
		var err error
		if qp.records != nil {
			_, err = qp.records.WriteRecords(qp.tx, qp.txEnds)
		} else {
			_, err = qp.conn.Write(qp.tx)
		}
		switch {
		case err == nil:
			qp.txAccepted += uint64(len(qp.tx))
			qp.s.ctr.add(SentBytes, len(qp.tx))
			qp.tx, qp.txEnds = qp.tx[:0], qp.txEnds[:0]
		case errors.Is(err, stream.ErrWouldBlock):
			qp.blocked = true
			qp.s.ctr.inc(WouldBlock)
			if qp.s.tracing() {
				qp.s.tracef(qp.Cfg.QPN, "tx", "stream send buffer full: %d bytes wait", len(qp.tx))
			}
			return
		default:
			// The stream is broken; its onClose follows.
			qp.tx, qp.txEnds = qp.tx[:0], qp.txEnds[:0]
			if qp.connErr == nil {
				qp.connErr = err
			}
			return
		}
	}
	if len(qp.tx) == 0 && qp.closeAfter {
		qp.closeAfter = false
		qp.conn.Close()
	}
}

// sendRTR frames the initiator's Ready-to-Receive: a zero-length RDMA
// Write, or a zero-length RDMA Read Request, to STag 1 (siw's choice:
// iw_cxgb4 rejects STag 0), or a zero-length Send with the first MSN of
// queue 0 (the peer consumes no receive WQE for it).
func (qp *QP) sendRTR() {
	r := &qp.req
	var h wire.Headers
	switch qp.rtrSend {
	case rtrWrite:
		h.DDP = wire.DDPFields{Opcode: wire.OpWrite, Last: true, STag: 1}
	case rtrRead:
		h.DDP = wire.DDPFields{Opcode: wire.OpReadRequest, Last: true, QN: wire.QNReadRequest, MSN: r.rrMSN}
		h.ReadRequest = wire.ReadRequestFields{SinkSTag: 1, SourceSTag: 1}
		r.rrMSN++
		r.orq = append(r.orq, orqEntry{rtr: true})
	case rtrSend:
		h.DDP = wire.DDPFields{Opcode: wire.OpSend, Last: true, QN: wire.QNSend, MSN: r.sendMSN}
		r.sendMSN++
	}
	qp.buildHeaders(&h)
	qp.appendFPDU(nil)
	qp.s.ctr.inc(RTRSent)
	if qp.s.tracing() {
		qp.s.tracef(qp.Cfg.QPN, "tx", "RTR (zero-length %v) sent", qp.rtrSend)
	}
	qp.rtrSend = rtrNone
}

// emit frames the next FPDU of the send queue; false when nothing can go.
func (r *requester) emit() bool {
	qp := r.qp
	if r.next == r.tail {
		return false
	}
	w := r.slot(r.next)
	if r.held(w) {
		return false
	}
	if !w.started {
		w.started = true
		if w.local {
			qp.localOp(w)
			r.next++
			return true
		}
	}
	var h wire.Headers
	var payload []byte
	switch w.wr.Opcode {
	case verbs.WRSend, verbs.WRSendWithInv:
		var ok bool
		if payload, ok = r.sendHeaders(w, &h); !ok {
			return true
		}
	case verbs.WRSendWithImm:
		qp.immediateHeader(&h, w, false)
	case verbs.WRRDMAWriteWithImm:
		if w.wdone {
			qp.immediateHeader(&h, w, true)
			break
		}
		fallthrough
	case verbs.WRRDMAWrite:
		var ok bool
		if payload, ok = r.writeHeaders(w, &h); !ok {
			return true
		}
		if h.DDP.Last && w.wr.Opcode == verbs.WRRDMAWriteWithImm {
			// The Write is framed; the Immediate Data message follows.
			w.wdone = true
			qp.buildHeaders(&h)
			qp.appendFPDU(payload)
			w.sent += len(payload)
			return true
		}
	case verbs.WRRDMARead:
		r.readRequest(w, &h)
	case verbs.WRAtomicCmpSwp, verbs.WRAtomicFetchAdd:
		r.atomicRequest(w, &h)
	}
	qp.buildHeaders(&h)
	qp.appendFPDU(payload)
	w.sent += len(payload)
	r.advance(w)
	return true
}

// held reports whether w must wait: a fenced WR for the RDMA Reads and
// atomics before it, an RDMA Read or atomic for a free ORD slot (also
// between the Read Requests of one READ).
func (r *requester) held(w *swqe) bool {
	if !w.started && w.wr.Flags&verbs.SendFence != 0 && r.rdOut > 0 {
		return true
	}
	return w.rdAtomic && r.rdOut >= r.qp.ord
}

// advance moves past w once it is wholly framed (a READ after its last
// Read Request).
func (r *requester) advance(w *swqe) {
	if w.wr.Opcode == verbs.WRRDMARead && w.part < len(w.sgl) {
		return // more Read Requests to go
	}
	if w.rdAtomic || w.sent == w.length {
		w.framed = true
		w.txEnd = r.qp.txTotal
		r.next++
	}
}

// sendHeaders fills h for w's next Send (or Send with Invalidate) FPDU
// and gathers its payload; false when gathering it failed the WR and the
// connection (a local protection fault).
func (r *requester) sendHeaders(w *swqe, h *wire.Headers) ([]byte, bool) {
	qp := r.qp
	if w.sent == 0 {
		w.msn = r.sendMSN
		r.sendMSN++
	}
	chunk := min(w.length-w.sent, qp.maxULPDU-wire.DDPUntaggedLen)
	op := wire.OpSend
	if w.wr.Opcode == verbs.WRSendWithInv {
		op = wire.OpSendInvalidate
	}
	if w.wr.Flags&verbs.SendSolicited != 0 {
		op += wire.OpSendSE - wire.OpSend
	}
	h.DDP = wire.DDPFields{Opcode: op, QN: wire.QNSend, MSN: w.msn, MO: uint32(w.sent),
		Last: w.sent+chunk == w.length}
	if w.wr.Opcode == verbs.WRSendWithInv {
		h.DDP.RsvdULP = w.wr.InvRKey
	}
	payload := qp.gather(w, chunk)
	return payload, payload != nil || chunk == 0
}

// writeHeaders fills h for w's next RDMA Write FPDU and gathers its
// payload; false as sendHeaders.
func (r *requester) writeHeaders(w *swqe, h *wire.Headers) ([]byte, bool) {
	qp := r.qp
	chunk := min(w.length-w.sent, qp.maxULPDU-wire.DDPTaggedLen)
	h.DDP = wire.DDPFields{Opcode: wire.OpWrite, STag: w.wr.RKey, TO: w.wr.RemoteAddr + uint64(w.sent),
		Last: w.sent+chunk == w.length}
	payload := qp.gather(w, chunk)
	return payload, payload != nil || chunk == 0
}

// readRequest fills h with w's next Read Request, one per sink SGE (see
// the top of this file), and queues it on the ORQ.
func (r *requester) readRequest(w *swqe, h *wire.Headers) {
	var sink verbs.SGE
	k := w.part
	if w.length == 0 {
		if len(w.sgl) > 0 {
			sink = w.sgl[0]
		}
		k = len(w.sgl)
	} else {
		for w.sgl[k].Length == 0 {
			k++
		}
		sink = w.sgl[k]
		for k++; k < len(w.sgl) && w.sgl[k].Length == 0; k++ {
		}
	}
	w.msn = r.rrMSN
	r.rrMSN++
	h.DDP = wire.DDPFields{Opcode: wire.OpReadRequest, Last: true, QN: wire.QNReadRequest, MSN: w.msn}
	h.ReadRequest = wire.ReadRequestFields{Size: sink.Length, SinkSTag: sink.LKey, SinkTO: sink.Addr,
		SourceSTag: w.wr.RKey, SourceTO: w.wr.RemoteAddr + uint64(w.sent)}
	w.part = k
	w.sent += int(sink.Length)
	r.orq = append(r.orq, orqEntry{idx: r.next, sink: sink, last: k == len(w.sgl)})
	r.rdOut++
}

// atomicRequest fills h with w's Atomic Request (RFC 7306 §5.1) and
// queues it on the ORQ.
func (r *requester) atomicRequest(w *swqe, h *wire.Headers) {
	w.msn = r.rrMSN
	r.rrMSN++
	r.atomicID++
	w.reqID = r.atomicID
	h.DDP = wire.DDPFields{Opcode: wire.OpAtomicRequest, Last: true, QN: wire.QNReadRequest, MSN: w.msn}
	a := &h.AtomicRequest
	a.RequestID, a.STag, a.TO = w.reqID, w.wr.RKey, w.wr.RemoteAddr
	if w.wr.Opcode == verbs.WRAtomicFetchAdd {
		a.Op, a.AddSwapData = wire.AtomicFetchAdd, w.wr.CompareAdd // mask 0: a plain 64-bit add
	} else {
		a.Op, a.AddSwapData, a.AddSwapMask = wire.AtomicCmpSwap, w.wr.Swap, ^uint64(0)
		a.CompareData, a.CompareMask = w.wr.CompareAdd, ^uint64(0)
	}
	r.orq = append(r.orq, orqEntry{idx: r.next})
	r.rdOut++
}

// Immediate Data (RFC 7306 §6.2) and verbs: the 8-byte Immediate Data
// field carries the WR's 32-bit imm_data in its low-order 4 octets (octets
// 4-7, big-endian, as IB's ImmDt), and the high-order 4 octets a word of
// flags of which only immAfterWrite is defined: set when the message ends
// an RDMA_WRITE_WITH_IMM (an RDMA Write followed by Immediate Data), clear
// for a SEND_WITH_IMM. The receiver reports WCRecvRDMAWithImm when the flag
// is set, else WCRecv; it ignores the other flag bits.
const immAfterWrite = 1

// immFlags returns the flags word of an Immediate Data value.
func immFlags(d uint64) uint32 { return uint32(d >> 32) }

// immediateHeader builds the Immediate Data message that carries w's
// imm_data: the next MSN on queue 0, SE when the WR is solicited.
func (qp *QP) immediateHeader(h *wire.Headers, w *swqe, afterWrite bool) {
	r := &qp.req
	w.msn = r.sendMSN
	r.sendMSN++
	op := wire.OpImmediate
	if w.wr.Flags&verbs.SendSolicited != 0 {
		op = wire.OpImmediateSE
	}
	h.DDP = wire.DDPFields{Opcode: op, QN: wire.QNSend, MSN: w.msn, Last: true}
	h.Immediate = uint64(w.wr.Imm)
	if afterWrite {
		h.Immediate |= uint64(immAfterWrite) << 32
	}
}

// gather copies the next n payload bytes of w into qp.payload. A local
// protection fault fails the WR (LOC_PROT_ERR) and the connection, and
// returns nil.
func (qp *QP) gather(w *swqe, n int) []byte {
	p := qp.payload[:n]
	if n == 0 {
		return p
	}
	if w.isInline {
		copy(p, w.inline[w.sent:])
		return p
	}
	if _, f := qp.Cfg.Memory.GatherAt(qp.Cfg.PD, w.sgl, w.sent, p); f != memory.Ok {
		qp.s.ctr.inc(LocalProtErr)
		w.failed, w.status = true, verbs.WCLocProtErr
		qp.fatal(fmt.Errorf("iwarp: WR %#x: local SGE: %v", w.wr.ID, f))
		return nil
	}
	return p
}

// localOp executes a LOCAL_INV or a BIND_MW in send-queue order: a
// window's STag is an STag like an MR's (RFC 5040 §5), bound and
// invalidated on the local NIC only.
func (qp *QP) localOp(w *swqe) {
	w.framed, w.done = true, true
	if w.wr.Opcode == verbs.WRBindMW {
		if _, err := qp.Cfg.Memory.BindByKey(qp.Cfg.PD, qp.Cfg.QPN, w.wr.Bind); err != nil {
			if qp.s.tracing() {
				qp.s.tracef(qp.Cfg.QPN, "req", "BIND_MW failed: %v", err)
			}
			w.failed, w.status = true, verbs.WCMWBindErr
		}
		return
	}
	if f := qp.Cfg.Memory.Invalidate(qp.Cfg.PD, qp.Cfg.QPN, w.wr.InvRKey); f != memory.Ok {
		w.failed, w.status = true, verbs.WCLocProtErr
	}
}

// retire completes finished WRs in order.
func (r *requester) retire() {
	qp := r.qp
	for r.head < r.tail {
		w := r.slot(r.head)
		if !w.done {
			if w.rdAtomic || !w.framed || qp.txAccepted < w.txEnd {
				return
			}
			w.done = true
		}
		r.head++
		if w.failed {
			qp.pushSend(verbs.WC{WRID: w.wr.ID, Status: w.status, Opcode: w.wr.Opcode.CompletionOpcode(), QPN: qp.Cfg.QPN})
			if qp.CurState != verbs.QPSErr {
				qp.enterError()
			}
			return
		}
		if w.wr.Flags&verbs.SendSignaled != 0 || qp.Cfg.SigAll {
			wc := verbs.WC{WRID: w.wr.ID, Opcode: w.wr.Opcode.CompletionOpcode(), QPN: qp.Cfg.QPN}
			if w.wr.Opcode == verbs.WRRDMARead {
				wc.ByteLen = uint32(w.length)
			}
			qp.pushSend(wc)
		}
	}
}

// flush completes every unretired WR: one marked failed with its status,
// the others with WR_FLUSH_ERR.
func (r *requester) flush() {
	qp := r.qp
	for ; r.head < r.tail; r.head++ {
		w := r.slot(r.head)
		st := verbs.WCWRFlushErr
		if w.failed {
			st = w.status
		}
		qp.pushSend(verbs.WC{WRID: w.wr.ID, Status: st, Opcode: w.wr.Opcode.CompletionOpcode(), QPN: qp.Cfg.QPN})
	}
	r.next = r.tail
	r.orq = r.orq[:0]
	r.rdOut = 0
}

// oldestOutstanding returns the oldest WR not retired that went on the
// wire, or nil: the one a Terminate from the peer is about.
func (r *requester) oldestOutstanding() *swqe {
	for i := r.head; i < r.tail; i++ {
		if w := r.slot(i); w.started && !w.local {
			return w
		}
	}
	return nil
}

// popORQ removes the head of the ORQ.
func (r *requester) popORQ() {
	n := copy(r.orq, r.orq[1:])
	r.orq = r.orq[:n]
}

// putAtomicResult writes an atomic's original remote value into the WQE's
// local buffer in host byte order, as verbs specifies.
func (qp *QP) putAtomicResult(w *swqe, orig uint64) memory.Fault {
	binary.NativeEndian.PutUint64(qp.scratch[:], orig)
	return qp.Cfg.Memory.Scatter(qp.Cfg.PD, w.sgl, qp.scratch[:], 0)
}
