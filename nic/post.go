// Posting work requests (ibv_post_send, ibv_post_recv): the checks verbs
// makes before a WR is queued (QP state, opcode for the QP type, flags, SGE
// counts, inline size, atomic operands, address handle), the copy that lets
// the caller reuse its WR at once, and the hand-off to the engine.

package nic

import (
	"fmt"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
)

// PostSend posts send WRs in order (ibv_post_send). Each is checked,
// copied (SGE list, inline data), and passed to the engine; the caller may
// reuse the WRs as soon as PostSend returns. On the first failure the error
// is a *verbs.PostError naming the WR (ibv's bad_wr); earlier WRs stay posted,
// later ones are not.
//
// The QP must be in RTS, SQD, SQE or ERR: posting to the send queue in
// RESET, INIT or RTR is an immediate error (IBTA Vol 1 §10.3.1, the QP
// states). In SQE and ERR the engine completes the WR with WR_FLUSH_ERR.
//
// INLINE WRs: the data is copied now, either from wr.Inline (then SGL must
// be empty) or gathered from the SGL. SGE addresses are addresses of
// registered memory here, not process pointers, so the gather goes through
// the lkeys and needs them valid, unlike libibverbs, where inline data
// skips the lkey.
//
// The send queue depth (max_send_wr) is enforced by the engine, which
// alone sees WRs retire; a full queue gives verbs.ErrQueueFull.
func (q *QP) PostSend(wrs ...*verbs.SendWR) error {
	q.sendMu.Lock()
	defer q.sendMu.Unlock()
	if q.destroyed.Load() {
		return errorf(verbs.ErrDestroyed, "post send on %v", q)
	}
	for i, wr := range wrs {
		if err := q.postSend(wr); err != nil {
			var id uint64
			if wr != nil {
				id = wr.ID
			}
			return &verbs.PostError{Index: i, WRID: id, Err: err}
		}
	}
	return nil
}

// postSend checks, copies and posts one WR. Caller holds sendMu.
func (q *QP) postSend(wr *verbs.SendWR) error {
	if wr == nil {
		return errorf(verbs.ErrInvalid, "nil send WR")
	}
	switch st := q.eng.State(); st {
	case verbs.QPSReset, verbs.QPSInit, verbs.QPSRTR:
		return errorf(verbs.ErrInvalidState, "post send on %v in %v", q, st)
	}
	total, err := q.checkSendWR(wr)
	if err != nil {
		return err
	}
	w := q.slab.sendWR()
	*w = *wr
	switch {
	case wr.Flags&verbs.SendInline == 0:
		w.SGL = q.slab.sgl(wr.SGL)
	case wr.Inline != nil:
		w.SGL = nil
		w.Inline = q.slab.bytes(len(wr.Inline))
		copy(w.Inline, wr.Inline)
	default:
		// SGL is kept (copied) for engines that gather it themselves;
		// the data to send is Inline.
		w.SGL = q.slab.sgl(wr.SGL)
		w.Inline = q.slab.bytes(int(total))
		if _, f := q.d.mem.Gather(q.pd.id, wr.SGL, w.Inline); f != memory.Ok {
			return errorf(verbs.ErrInvalid, "inline WR %#x: gathering its SGEs: %v", wr.ID, f)
		}
	}
	if err := q.eng.PostSend(w); err != nil {
		return fmt.Errorf("nic: post send on %v: %w", q, err)
	}
	return nil
}

// checkSendWR applies the verbs rules for a send WR on this QP and returns
// the message length.
func (q *QP) checkSendWR(wr *verbs.SendWR) (uint64, error) {
	op := wr.Opcode
	switch {
	case verbs.OpcodesOf(q.typ).Has(op):
	case verbs.UnsupportedOpcodes.Has(op):
		return 0, errorf(verbs.ErrNotSupported, "%v WRs", op)
	case verbs.RCOpcodes.Has(op):
		return 0, errorf(verbs.ErrInvalid, "%v is not a %v operation", op, q.typ)
	default:
		return 0, errorf(verbs.ErrInvalid, "unknown send opcode %d", op)
	}
	if verbs.AtomicOpcodes.Has(op) && q.d.limits.NoAtomics {
		return 0, errorf(verbs.ErrNotSupported, "%v on a device without atomics", op)
	}
	if !q.d.capsEx().Allows(op) {
		return 0, errorf(verbs.ErrNotSupported, "%v on a device without it", op)
	}
	if err := verbs.CheckIBTA15WR(wr); err != nil {
		return 0, fmt.Errorf("nic: %w", err)
	}
	if bad := wr.Flags &^ verbs.KnownSendFlags; bad != 0 {
		return 0, errorf(verbs.ErrInvalid, "unknown send flags %#x", uint8(bad))
	}
	inline := wr.Flags&verbs.SendInline != 0
	if op == verbs.WRBindMW && (len(wr.SGL) > 0 || inline || wr.Inline != nil) {
		// A bind moves no data (rxe refuses the same at post time).
		return 0, errorf(verbs.ErrInvalid, "BIND_MW with SGEs or inline data")
	}
	if wr.Inline != nil && (!inline || len(wr.SGL) > 0) {
		return 0, errorf(verbs.ErrInvalid, "Inline data needs the INLINE flag and no SGEs")
	}

	maxSGE := int(q.cap.MaxSendSGE)
	if op == verbs.WRRDMARead {
		maxSGE = min(maxSGE, q.d.limits.MaxSGERd)
	}
	if len(wr.SGL) > maxSGE {
		return 0, errorf(verbs.ErrInvalid, "%v WR with %d SGEs, the QP allows %d", op, len(wr.SGL), maxSGE)
	}
	total := memory.TotalLength(wr.SGL)
	if wr.Inline != nil {
		total = uint64(len(wr.Inline))
	}
	if total > verbs.MaxMsgSize {
		return 0, errorf(verbs.ErrInvalid, "%d-byte message exceeds max_msg_sz %d", total, verbs.MaxMsgSize)
	}

	if inline {
		if !verbs.InlineOpcodes.Has(op) {
			return 0, errorf(verbs.ErrInvalid, "INLINE with %v: only SEND and RDMA WRITE carry inline data", op)
		}
		if total > uint64(q.cap.MaxInlineData) {
			return 0, errorf(verbs.ErrInvalid, "%d inline bytes, the QP allows %d", total, q.cap.MaxInlineData)
		}
	}
	if verbs.AtomicOpcodes.Has(op) {
		// The local buffer receives the 8-byte original value, and the
		// remote address must be naturally aligned for a 64-bit atomic;
		// rxe refuses a misaligned one at post time too.
		if len(wr.SGL) != 1 || wr.SGL[0].Length != 8 {
			return 0, errorf(verbs.ErrInvalid, "%v needs exactly one 8-byte SGE", op)
		}
		if wr.RemoteAddr&7 != 0 {
			return 0, errorf(verbs.ErrInvalid, "%v remote address %#x is not 8-byte aligned", op, wr.RemoteAddr)
		}
	}
	if q.typ == verbs.QPTypeUD {
		if wr.AH == nil {
			return 0, errorf(verbs.ErrInvalid, "UD send without an address handle")
		}
		ah := q.d.lookupAH(wr.AH)
		if ah == nil {
			return 0, errorf(verbs.ErrInvalid, "UD send: AH is not from CreateAH or was destroyed (use AH.AV())")
		}
		if ah.pd != q.pd {
			// Protection domains: an AH is usable only by QPs of its PD.
			return 0, errorf(verbs.ErrInvalid, "UD send: AH in PD %d, QP in PD %d", ah.pd.id, q.pd.id)
		}
		if wr.RemoteQPN > maxPSN {
			return 0, errorf(verbs.ErrInvalid, "UD send: remote QPN %#x exceeds 24 bits", wr.RemoteQPN)
		}
	}
	return total, nil
}

// PostRecv posts receive WRs to the QP's own receive queue in order
// (ibv_post_recv); the caller may reuse them at once. On the first failure
// the error is a *verbs.PostError. A QP that uses an SRQ has no receive queue:
// post to the SRQ instead.
//
// Posting in RESET is an error; from INIT on WRs are queued. In ERR they
// complete at once with WR_FLUSH_ERR on the receive CQ (IBTA Vol 1 §10.3.1:
// in the Error state WRs posted to either queue are flushed); nic flushes
// them itself, so the engine need not watch for posts in ERR. After a
// successful post the engine is told (RecvPosted).
func (q *QP) PostRecv(wrs ...*verbs.RecvWR) error {
	if q.srq != nil {
		return errorf(verbs.ErrInvalid, "post recv on %v: it receives from an SRQ", q)
	}
	r := q.rq
	gen := r.gen.Load()
	if st := q.eng.State(); st == verbs.QPSReset {
		return errorf(verbs.ErrInvalidState, "post recv on %v in RESET", q)
	}
	r.mu.Lock()
	if q.destroyed.Load() {
		r.mu.Unlock()
		return errorf(verbs.ErrDestroyed, "post recv on %v", q)
	}
	if r.gen.Load() != gen {
		// Reset while we looked at the state: the post counts as made in
		// RESET.
		r.mu.Unlock()
		return errorf(verbs.ErrInvalidState, "post recv on %v: QP reset meanwhile", q)
	}
	var err error
	posted := 0
	for i, wr := range wrs {
		if e := checkRecvWR(wr, r.maxSGE); e != nil {
			err = &verbs.PostError{Index: i, WRID: wrID(wr), Err: e}
			break
		}
		if r.n == len(r.ring) {
			err = &verbs.PostError{Index: i, WRID: wr.ID, Err: errorf(verbs.ErrQueueFull, "%v receive queue holds its max_recv_wr %d WRs", q, len(r.ring))}
			break
		}
		r.push(wr)
		posted++
	}
	r.mu.Unlock()
	if posted == 0 {
		return err
	}
	// The engine moves the QP to ERR before it flushes the receive queue,
	// so a WR pushed after its flush began is seen here and flushed.
	if q.eng.State() == verbs.QPSErr {
		q.flushRecv()
		return err
	}
	q.eng.RecvPosted()
	return err
}

// flushRecv completes every queued receive WR with WR_FLUSH_ERR.
func (q *QP) flushRecv() {
	for {
		wr, ok := q.rq.Pop()
		if !ok {
			return
		}
		wc := verbs.WC{WRID: wr.ID, Status: verbs.WCWRFlushErr, Opcode: verbs.WCRecv, QPN: q.qpn}
		q.recvCQ.Push(&wc) // a flush lost to overflow: the CQ raised CQ_ERR
	}
}
