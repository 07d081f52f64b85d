// Posting: PostSend and PostRecv check a WR as nic's PostSend and PostRecv
// would (so errors are synchronous, as in-process), write it into the next
// slot of the ring, publish the producer index and ring the doorbell only
// if the daemon's drainer sleeps. INLINE data is gathered here, at post
// time, as verbs requires. Nothing allocates.

package client

import (
	"fmt"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/verbs"
)

// usable fails once the QP is destroyed or the daemon gone.
func (q *QP) usable() error {
	if err := q.d.goneError(); err != nil {
		return err
	}
	if q.dead.Load() {
		return fmt.Errorf("rnicd: %v: %w", q, verbs.ErrDestroyed)
	}
	return nil
}

// PostSend posts send WRs in order; on an error (a *verbs.PostError for a
// WR at fault) the WRs before the failing one were posted.
func (q *QP) PostSend(wrs ...*verbs.SendWR) error {
	if !canSend(q.ringState()) {
		q.refreshState()
	}
	q.sqMu.Lock()
	defer q.sqMu.Unlock()
	if err := q.usable(); err != nil {
		return err
	}
	var err error
	posted := 0
	for i, wr := range wrs {
		if err = q.postSend(wr); err != nil {
			var id uint64
			if wr != nil {
				id = wr.ID
			}
			err = &verbs.PostError{Index: i, WRID: id, Err: err}
			break
		}
		posted++
	}
	if posted > 0 {
		q.ring()
	}
	return err
}

// canSend reports whether a QP in st takes send WRs.
func canSend(st verbs.QPState) bool {
	return st != verbs.QPSReset && st != verbs.QPSInit && st != verbs.QPSRTR
}

// refreshState has the daemon store the QP's state in the rings. Their
// copy is a cache: it may lag a move the CM made in the daemon (the iWARP
// engine's RTS at the peer's RTR), so a post that finds the QP not ready
// asks before it fails.
func (q *QP) refreshState() {
	var rep proto.QPStateReply
	q.d.call(proto.OpQPState, &proto.Handle{H: q.h}, nil, &rep)
}

// postSend checks wr and writes it into the send ring. Caller holds sqMu.
func (q *QP) postSend(wr *verbs.SendWR) error {
	if wr == nil {
		return fmt.Errorf("rnicd: nil send WR: %w", verbs.ErrInvalid)
	}
	if st := q.ringState(); !canSend(st) {
		return fmt.Errorf("rnicd: post send on %v in %v: %w", q, st, verbs.ErrInvalidState)
	}
	ah, err := q.checkSendWR(wr)
	if err != nil {
		return err
	}
	r := &q.rings.SQ
	if q.sqProd-r.Cons.Load() >= r.Cap {
		return fmt.Errorf("rnicd: %v send queue holds its max_send_wr %d WRs: %w", q, r.Cap, verbs.ErrQueueFull)
	}
	slot := r.Slot(q.sqProd)
	n := 0
	if wr.Flags&verbs.SendInline != 0 {
		payload := proto.SendPayload(slot)
		if wr.Inline != nil {
			n = copy(payload, wr.Inline)
		} else if n, err = q.d.gather(q.pd, wr.SGL, payload); err != nil {
			return fmt.Errorf("rnicd: inline WR %#x: %w", wr.ID, err)
		}
	}
	if err := proto.PutSendWQE(slot, wr, ah, n); err != nil {
		return fmt.Errorf("rnicd: %w: %w", err, verbs.ErrInvalid)
	}
	q.sqProd++
	r.Prod.Store(q.sqProd)
	return nil
}

// checkSendWR applies nic's rules for a send WR on this QP and returns
// the WR's address handle (UD).
func (q *QP) checkSendWR(wr *verbs.SendWR) (uint32, error) {
	op := wr.Opcode
	switch {
	case verbs.OpcodesOf(q.typ).Has(op):
	case verbs.UnsupportedOpcodes.Has(op):
		return 0, fmt.Errorf("rnicd: %v WRs: %w", op, verbs.ErrNotSupported)
	case verbs.RCOpcodes.Has(op):
		return 0, fmt.Errorf("rnicd: %v is not a %v operation: %w", op, q.typ, verbs.ErrInvalid)
	default:
		return 0, fmt.Errorf("rnicd: unknown send opcode %d: %w", op, verbs.ErrInvalid)
	}
	if verbs.AtomicOpcodes.Has(op) && q.d.attr.AtomicCap == verbs.AtomicNone {
		return 0, fmt.Errorf("rnicd: %v on a device without atomics: %w", op, verbs.ErrNotSupported)
	}
	if !q.d.attr.DeviceCapFlagsEx.Allows(op) {
		return 0, fmt.Errorf("rnicd: %v on a device without it: %w", op, verbs.ErrNotSupported)
	}
	if err := verbs.CheckIBTA15WR(wr); err != nil {
		return 0, fmt.Errorf("rnicd: %w", err)
	}
	if bad := wr.Flags &^ verbs.KnownSendFlags; bad != 0 {
		return 0, fmt.Errorf("rnicd: unknown send flags %#x: %w", uint8(bad), verbs.ErrInvalid)
	}
	inline := wr.Flags&verbs.SendInline != 0
	if op == verbs.WRBindMW && (len(wr.SGL) > 0 || inline || wr.Inline != nil) {
		return 0, fmt.Errorf("rnicd: BIND_MW with SGEs or inline data: %w", verbs.ErrInvalid)
	}
	if wr.Inline != nil && (!inline || len(wr.SGL) > 0) {
		return 0, fmt.Errorf("rnicd: Inline data needs the INLINE flag and no SGEs: %w", verbs.ErrInvalid)
	}
	maxSGE := int(q.cap.MaxSendSGE)
	if op == verbs.WRRDMARead {
		maxSGE = min(maxSGE, q.d.attr.MaxSGERd)
	}
	if len(wr.SGL) > maxSGE {
		return 0, fmt.Errorf("rnicd: %v WR with %d SGEs, the QP allows %d: %w", op, len(wr.SGL), maxSGE, verbs.ErrInvalid)
	}
	total := memory.TotalLength(wr.SGL)
	if wr.Inline != nil {
		total = uint64(len(wr.Inline))
	}
	if total > verbs.MaxMsgSize {
		return 0, fmt.Errorf("rnicd: %d-byte message exceeds max_msg_sz %d: %w", total, verbs.MaxMsgSize, verbs.ErrInvalid)
	}
	if inline {
		if !verbs.InlineOpcodes.Has(op) {
			return 0, fmt.Errorf("rnicd: INLINE with %v: only SEND and RDMA WRITE carry inline data: %w", op, verbs.ErrInvalid)
		}
		if total > uint64(q.cap.MaxInlineData) {
			return 0, fmt.Errorf("rnicd: %d inline bytes, the QP allows %d: %w", total, q.cap.MaxInlineData, verbs.ErrInvalid)
		}
	}
	if verbs.AtomicOpcodes.Has(op) {
		if len(wr.SGL) != 1 || wr.SGL[0].Length != 8 {
			return 0, fmt.Errorf("rnicd: %v needs exactly one 8-byte SGE: %w", op, verbs.ErrInvalid)
		}
		if wr.RemoteAddr&7 != 0 {
			return 0, fmt.Errorf("rnicd: %v remote address %#x is not 8-byte aligned: %w", op, wr.RemoteAddr, verbs.ErrInvalid)
		}
	}
	if q.typ != verbs.QPTypeUD {
		return 0, nil
	}
	if wr.AH == nil {
		return 0, fmt.Errorf("rnicd: UD send without an address handle: %w", verbs.ErrInvalid)
	}
	a := q.d.ah(wr.AH)
	if a == nil {
		return 0, fmt.Errorf("rnicd: UD send: AH is not from CreateAH or was destroyed (use AH.AV()): %w", verbs.ErrInvalid)
	}
	if a.pd != q.pd {
		return 0, fmt.Errorf("rnicd: UD send: AH and QP are in different PDs: %w", verbs.ErrInvalid)
	}
	if wr.RemoteQPN > 0xffffff {
		return 0, fmt.Errorf("rnicd: UD send: remote QPN %#x exceeds 24 bits: %w", wr.RemoteQPN, verbs.ErrInvalid)
	}
	return a.h, nil
}

// PostRecv posts receive WRs to the QP's own receive queue.
func (q *QP) PostRecv(wrs ...*verbs.RecvWR) error {
	if q.srq != nil {
		return fmt.Errorf("rnicd: post recv on %v: it receives from an SRQ: %w", q, verbs.ErrInvalid)
	}
	q.rqMu.Lock()
	defer q.rqMu.Unlock()
	if err := q.usable(); err != nil {
		return err
	}
	st := q.ringState()
	if st == verbs.QPSReset {
		return fmt.Errorf("rnicd: post recv on %v in RESET: %w", q, verbs.ErrInvalidState)
	}
	err := postRecv(&q.rings.RQ, &q.rqProd, int(q.cap.MaxRecvSGE), wrs, q)
	// In INIT nothing can arrive yet (and the daemon takes the ring
	// before it moves the QP on); later a message may come at once.
	if st != verbs.QPSInit {
		q.d.waitRecvs(q.rings, q.rqProd)
	}
	return err
}

// postRecv writes receive WRs into ring r (a QP's or an SRQ's), rings the
// doorbell of b if any was written, and returns a *verbs.PostError for the
// first WR at fault.
func postRecv(r *proto.WorkRing, prod *uint32, maxSGE int, wrs []*verbs.RecvWR, b doorbell) error {
	var err error
	posted := 0
	for i, wr := range wrs {
		switch {
		case wr == nil:
			err = &verbs.PostError{Index: i, Err: fmt.Errorf("rnicd: nil receive WR: %w", verbs.ErrInvalid)}
		case len(wr.SGL) > maxSGE:
			err = &verbs.PostError{Index: i, WRID: wr.ID,
				Err: fmt.Errorf("rnicd: receive WR has %d SGEs, the queue allows %d: %w", len(wr.SGL), maxSGE, verbs.ErrInvalid)}
		case *prod-r.Cons.Load() >= r.Cap:
			err = &verbs.PostError{Index: i, WRID: wr.ID,
				Err: fmt.Errorf("rnicd: receive queue holds its %d WRs: %w", r.Cap, verbs.ErrQueueFull)}
		default:
			if e := proto.PutRecvWQE(r.Slot(*prod), wr); e != nil {
				err = &verbs.PostError{Index: i, WRID: wr.ID, Err: fmt.Errorf("rnicd: %w: %w", e, verbs.ErrInvalid)}
				break
			}
			*prod++
			r.Prod.Store(*prod)
			posted++
			continue
		}
		break
	}
	if posted > 0 {
		b.ring()
	}
	return err
}

// doorbell is a QP or SRQ whose drainer a post wakes.
type doorbell interface{ ring() }
