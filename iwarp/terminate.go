package iwarp

import (
	"errors"
	"fmt"

	"github.com/rnic/rnic/iwarp/wire"
	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
)

// Terminate messages, RFC 5040 §4.8: the last message a side sends after
// it found an error. Which offending headers go with it follows siw
// (siw_send_terminate):
//
//   - LLP (MPA) errors, RDMAP and DDP version errors, the unexpected
//     opcode, local catastrophic errors: no header;
//   - other DDP errors: M and D, with the offending DDP header and the
//     segment's length;
//   - RDMAP remote protection and remote operation errors: M, D and R,
//     with the DDP header and the RDMAP header (the Read or Atomic
//     Request's; for messages without one R is set with nothing after).
//
// The DDP Segment Length is the offending segment's length (its
// ULPDU_Length) as RFC 5040 asks; siw sends the payload length there.

// termInfo is the Terminate to send.
type termInfo struct {
	code wire.TermCode
	seg  []byte // the offending ULPDU, if one was received
	rreq *rresp // a Read Request whose response failed while being sent
}

var (
	errUnexpected = errors.New("iwarp: unexpected opcode")
	errNoRTR      = errors.New("iwarp: first FPDU is not the negotiated RTR")
	errAccess     = errors.New("iwarp: QP access flags forbid the operation")
)

func errFault(f memory.Fault) error { return fmt.Errorf("iwarp: memory check: %v", f) }

func errUntagged(c wire.TermCode) error { return fmt.Errorf("iwarp: %v", c) }

// termFields builds the Terminate body fields for ti.
func termFields(ti *termInfo) wire.TermFields {
	f := wire.TermFields{Code: ti.code}
	c := ti.code
	switch c.Layer() {
	case wire.LayerDDP:
		if c == wire.TermDDPTaggedVersion || c == wire.TermDDPUntaggedVersion || c.EType() == wire.ETypeDDPLocalCatastrophic {
			return f
		}
		if hl, ok := ddpHeaderOf(ti.seg); ok {
			f.M, f.D = true, true
			f.DDPSegLen, f.DDPHeader = uint16(len(ti.seg)), ti.seg[:hl]
		}
	case wire.LayerRDMAP:
		if c == wire.TermRDMAPVersion || c == wire.TermRDMAPUnexpectedOpcode || c.EType() == wire.ETypeRDMAPLocalCatastrophic {
			return f
		}
		if ti.rreq != nil {
			// Reconstruct the Read Request from what was kept of it.
			e := ti.rreq
			h := wire.Headers{DDP: wire.DDPFields{Opcode: wire.OpReadRequest, Last: true, QN: wire.QNReadRequest, MSN: e.msn}}
			h.ReadRequest = wire.ReadRequestFields{SinkSTag: e.sinkSTag, SinkTO: e.sinkTO, Size: e.size, SourceSTag: e.srcSTag, SourceTO: e.srcTO}
			b := wire.AppendHeaders(nil, &h)
			f.M, f.D, f.R = true, true, true
			f.DDPSegLen, f.DDPHeader, f.RDMAPHeader = uint16(len(b)), b[:wire.DDPUntaggedLen], b[wire.DDPUntaggedLen:]
			return f
		}
		if hl, ok := ddpHeaderOf(ti.seg); ok {
			f.M, f.D, f.R = true, true, true
			f.DDPSegLen, f.DDPHeader = uint16(len(ti.seg)), ti.seg[:hl]
			op := wire.DDPHeader(ti.seg).Opcode().Info()
			if (op.Body == wire.BodyReadRequest || op.Body == wire.BodyAtomicRequest) && len(ti.seg) >= hl+op.BodyLen {
				f.RDMAPHeader = ti.seg[hl : hl+op.BodyLen]
			}
		}
	}
	return f
}

// ddpHeaderOf returns the size of the DDP header at the start of seg, if
// seg holds one.
func ddpHeaderOf(seg []byte) (int, bool) {
	if len(seg) < 2 {
		return 0, false
	}
	hl := wire.DDPHeaderLen(wire.DDPHeader(seg).Tagged())
	return hl, len(seg) >= hl
}

// sendTerminate sends a Terminate for an error this side found, closes
// the stream in order, and moves the QP to ERR (flushing its WRs). Caller
// holds Mu.
func (qp *QP) sendTerminate(ti termInfo, cause error) {
	if qp.CurState == verbs.QPSErr {
		return
	}
	s := qp.s
	if qp.cm == cmConnected && qp.conn != nil {
		f := termFields(&ti)
		body := wire.AppendTerminate(make([]byte, 0, wire.TermLen(&f)), &f)
		h := wire.Headers{DDP: wire.DDPFields{Opcode: wire.OpTerminate, Last: true, QN: wire.QNTerminate, MSN: 1}}
		qp.buildHeaders(&h)
		qp.appendFPDU(body)
		s.ctr.inc(TermSent)
		if s.tracing() {
			s.tracef(qp.Cfg.QPN, "term", "Terminate sent: %v (%#04x) M=%v D=%v R=%v: %v", ti.code, uint16(ti.code), f.M, f.D, f.R, cause)
		}
	}
	qp.connErr = &TerminateError{Code: ti.code, Sent: true}
	qp.raise(termEvent(ti.code))
	qp.closeStream()
	qp.enterError()
}

// termEvent is the async event of the side that found an error.
func termEvent(c wire.TermCode) verbs.AsyncEvent {
	switch {
	case c.Layer() == wire.LayerRDMAP && c.EType() == wire.ETypeRDMAPRemoteProtection,
		c.Layer() == wire.LayerDDP && c.EType() == wire.ETypeDDPTagged:
		return verbs.EventQPAccessErr
	case c.Layer() == wire.LayerRDMAP && c.EType() == wire.ETypeRDMAPRemoteOperation,
		c.Layer() == wire.LayerDDP && c.EType() == wire.ETypeDDPUntagged:
		return verbs.EventQPReqErr
	}
	return verbs.EventQPFatal
}

// TermStatus is the completion status the oldest outstanding send WR gets
// when the peer's Terminate carries code: remote protection errors
// (RDMAP remote protection, DDP tagged buffer) → REM_ACCESS_ERR; invalid
// requests (RDMAP version and opcode, DDP untagged buffer errors other
// than "no buffer") → REM_INV_REQ_ERR; anything else → REM_OP_ERR.
func TermStatus(c wire.TermCode) verbs.WCStatus {
	switch {
	case c.Layer() == wire.LayerRDMAP && c.EType() == wire.ETypeRDMAPRemoteProtection,
		c.Layer() == wire.LayerDDP && c.EType() == wire.ETypeDDPTagged:
		return verbs.WCRemAccessErr
	case c == wire.TermRDMAPVersion, c == wire.TermRDMAPUnexpectedOpcode,
		c.Layer() == wire.LayerDDP && c.EType() == wire.ETypeDDPUntagged && c != wire.TermDDPUntaggedNoBuffer:
		return verbs.WCRemInvReqErr
	}
	return verbs.WCRemOpErr
}

// receiveTerminate handles the peer's Terminate: the oldest outstanding
// send WR completes with the matching status, the rest are flushed, the
// QP moves to ERR and the stream is closed.
func (qp *QP) receiveTerminate(seg *wire.Segment) {
	t := seg.Terminate()
	code := t.Code()
	s := qp.s
	s.ctr.inc(TermRcvd)
	if s.tracing() {
		s.tracef(qp.Cfg.QPN, "term", "Terminate received: %v (%#04x) M=%v D=%v R=%v", code, uint16(code), t.M(), t.D(), t.R())
	}
	if w := qp.req.oldestOutstanding(); w != nil && !w.failed {
		w.failed, w.status = true, TermStatus(code)
	}
	qp.rtrWait = false
	qp.connErr = &TerminateError{Code: code}
	qp.raise(verbs.EventQPFatal)
	qp.closeStream()
	qp.enterError()
}
