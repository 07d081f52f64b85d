//go:build verbs

// Posting work requests. Go fills flat rn_send_wr/rn_recv_wr arrays and
// SGE arrays on its stack; one cgo call per RN_BATCH WRs builds the
// ibv_send_wr/ibv_recv_wr chain in C memory and posts it, as ibv_post_send
// would a chain of the caller's. On an error the WRs before the failing
// one are posted and the error is a *verbs.PostError naming it.

package passthrough

/*
#cgo noescape rn_post_send
#cgo nocallback rn_post_send
#cgo noescape rn_post_recv
#cgo nocallback rn_post_recv
#cgo noescape rn_post_srq_recv
#cgo nocallback rn_post_srq_recv
#include "shim.h"
*/
import "C"

import (
	"fmt"

	"github.com/rnic/rnic/nic/verbs"
)

const (
	// batchSGEs is the most SGEs one cgo call carries (beyond any
	// device's max_sge, so a single WR always fits).
	batchSGEs = 256
	// batchInline is the most inline bytes one cgo call carries, and so
	// the largest inline message given as SendWR.Inline.
	batchInline = 4096
)

func (q *qp) PostSend(wrs ...*verbs.SendWR) error {
	if len(wrs) == 0 {
		return nil
	}
	q.mu.RLock()
	defer q.mu.RUnlock()
	if q.gone {
		return &verbs.PostError{Index: 0, WRID: idOf(wrs[0]), Err: fmt.Errorf("passthrough: post send: %w", verbs.ErrDestroyed)}
	}
	if q.typ == verbs.QPTypeUD {
		q.d.ahMu.RLock()
		defer q.d.ahMu.RUnlock()
	}
	var b sendBatch
	for done := 0; done < len(wrs); {
		b.n, b.ns, b.ni = 0, 0, 0
		var stop error
		for done+b.n < len(wrs) && b.n < C.RN_BATCH && b.bind == nil {
			ok, err := b.add(q, wrs[done+b.n])
			if err != nil {
				stop = err
			}
			if !ok {
				break
			}
		}
		if b.n > 0 {
			var bad C.int
			r := C.rn_post_send(q.c, &b.w[0], C.int(b.n), &b.sg[0], (*C.uint8_t)(&b.inl[0]), &bad)
			b.endBind(r == 0)
			if r != 0 {
				i := done + int(bad)
				return &verbs.PostError{Index: i, WRID: idOf(wrs[i]), Err: fmt.Errorf("passthrough: post send: %w", postErrno(r))}
			}
		}
		done += b.n
		if stop != nil {
			return &verbs.PostError{Index: done, WRID: idOf(wrs[done]), Err: stop}
		}
	}
	return nil
}

// sendBatch is what one rn_post_send call carries: n WRs, the ns SGEs
// and ni inline bytes they point into.
type sendBatch struct {
	w         [C.RN_BATCH]C.struct_rn_send_wr
	sg        [batchSGEs]C.struct_ibv_sge
	inl       [batchInline]byte
	n, ns, ni int
	// bind is the batch's BIND_MW WR, if any: its last, so that the next
	// WR finds the window by its new rkey (bind.go).
	bind *pendingBind
}

// add puts wr in the batch as its next WR. It reports false when wr is
// not in the batch: with an error when wr is bad, without one when its
// SGEs or inline bytes do not fit beside the batch's (the next batch takes
// it: a single WR always fits).
func (b *sendBatch) add(q *qp, wr *verbs.SendWR) (bool, error) {
	if wr == nil {
		return false, fmt.Errorf("passthrough: nil send WR: %w", verbs.ErrInvalid)
	}
	if verbs.IBTA15Opcodes.Has(wr.Opcode) {
		// ibv_post_send has no fields for them (the extended WR API,
		// ibv_wr_flush and ibv_wr_atomic_write, does). The device's
		// Query leaves out the FLUSH and ATOMIC WRITE flags accordingly.
		return false, fmt.Errorf("passthrough: %v through ibv_post_send: %w", wr.Opcode, verbs.ErrNotSupported)
	}
	if wr.Opcode == verbs.WRBindMW && b.n > 0 {
		return false, nil // a bind starts a batch of its own
	}
	c := &b.w[b.n]
	*c = C.struct_rn_send_wr{
		wr_id:       C.uint64_t(wr.ID),
		remote_addr: C.uint64_t(wr.RemoteAddr),
		compare_add: C.uint64_t(wr.CompareAdd),
		swap:        C.uint64_t(wr.Swap),
		opcode:      C.uint32_t(wr.Opcode),
		flags:       C.uint32_t(wr.Flags),
		imm:         C.uint32_t(wr.Imm),
		inv_rkey:    C.uint32_t(wr.InvRKey),
		rkey:        C.uint32_t(wr.RKey),
		remote_qpn:  C.uint32_t(wr.RemoteQPN),
		remote_qkey: C.uint32_t(wr.RemoteQKey),
	}
	fits, err := b.data(c, wr)
	if !fits || err != nil {
		return false, err
	}
	if q.typ == verbs.QPTypeUD {
		h := q.d.ahs[wr.AH]
		if h == nil {
			return false, fmt.Errorf("passthrough: UD send WR without an address handle of this device: %w", verbs.ErrInvalid)
		}
		c.ah = h.c
	}
	if wr.Opcode == verbs.WRBindMW {
		if err := b.startBind(q.d, c, wr); err != nil {
			return false, err
		}
	}
	b.n++
	return true, nil
}

// data puts wr's inline bytes or SGL in the batch for c.
func (b *sendBatch) data(c *C.struct_rn_send_wr, wr *verbs.SendWR) (bool, error) {
	if wr.Inline != nil {
		// The caller's bytes, copied here as nic copies them at post
		// time; the SGL is not used.
		if len(wr.Inline) > batchInline {
			return false, fmt.Errorf("passthrough: %d inline bytes, at most %d: %w", len(wr.Inline), batchInline, verbs.ErrInvalid)
		}
		if b.ni+len(wr.Inline) > batchInline {
			return false, nil
		}
		c.flags |= C.uint32_t(verbs.SendInline)
		c.inline_off, c.inline_len = C.uint32_t(b.ni), C.uint32_t(len(wr.Inline))
		b.ni += copy(b.inl[b.ni:], wr.Inline)
		return true, nil
	}
	if len(wr.SGL) > batchSGEs {
		return false, fmt.Errorf("passthrough: %d SGEs in one WR, at most %d: %w", len(wr.SGL), batchSGEs, verbs.ErrInvalid)
	}
	if b.ns+len(wr.SGL) > batchSGEs {
		return false, nil
	}
	c.sge_off, c.num_sge = C.uint32_t(b.ns), C.uint32_t(len(wr.SGL))
	for _, s := range wr.SGL {
		b.sg[b.ns] = C.struct_ibv_sge{addr: C.uint64_t(s.Addr), length: C.uint32_t(s.Length), lkey: C.uint32_t(s.LKey)}
		b.ns++
	}
	return true, nil
}

func idOf(wr *verbs.SendWR) uint64 {
	if wr == nil {
		return 0
	}
	return wr.ID
}

// postErrno: a full queue is ENOMEM from ibv_post_send/recv.
func postErrno(r C.int) error {
	if r < 0 {
		r = -r
	}
	return errnoSentinel(errnoOf(r), verbs.ErrQueueFull)
}

func (q *qp) PostRecv(wrs ...*verbs.RecvWR) error {
	if len(wrs) == 0 {
		return nil
	}
	q.mu.RLock()
	defer q.mu.RUnlock()
	if q.gone {
		return &verbs.PostError{Index: 0, WRID: recvID(wrs[0]), Err: fmt.Errorf("passthrough: post receive: %w", verbs.ErrDestroyed)}
	}
	return postRecv(q.c, nil, wrs)
}

func recvID(wr *verbs.RecvWR) uint64 {
	if wr == nil {
		return 0
	}
	return wr.ID
}

// postRecv posts to qp's receive queue, or to srq when qp is nil.
func postRecv(qp *C.struct_ibv_qp, srq *C.struct_ibv_srq, wrs []*verbs.RecvWR) error {
	var (
		w  [C.RN_BATCH]C.struct_rn_recv_wr
		sg [batchSGEs]C.struct_ibv_sge
	)
	for done := 0; done < len(wrs); {
		n, ns := 0, 0
		var stop error
		for done+n < len(wrs) && n < C.RN_BATCH {
			wr := wrs[done+n]
			if wr == nil {
				stop = fmt.Errorf("passthrough: nil receive WR: %w", verbs.ErrInvalid)
				break
			}
			if len(wr.SGL) > batchSGEs {
				stop = fmt.Errorf("passthrough: %d SGEs in one WR, at most %d: %w", len(wr.SGL), batchSGEs, verbs.ErrInvalid)
				break
			}
			if ns+len(wr.SGL) > batchSGEs {
				break
			}
			w[n] = C.struct_rn_recv_wr{wr_id: C.uint64_t(wr.ID), sge_off: C.uint32_t(ns), num_sge: C.uint32_t(len(wr.SGL))}
			for _, s := range wr.SGL {
				sg[ns] = C.struct_ibv_sge{addr: C.uint64_t(s.Addr), length: C.uint32_t(s.Length), lkey: C.uint32_t(s.LKey)}
				ns++
			}
			n++
		}
		if n > 0 {
			var bad, r C.int
			if qp != nil {
				r = C.rn_post_recv(qp, &w[0], C.int(n), &sg[0], &bad)
			} else {
				r = C.rn_post_srq_recv(srq, &w[0], C.int(n), &sg[0], &bad)
			}
			if r != 0 {
				i := done + int(bad)
				return &verbs.PostError{Index: i, WRID: recvID(wrs[i]), Err: fmt.Errorf("passthrough: post receive: %w", postErrno(r))}
			}
		}
		done += n
		if stop != nil {
			return &verbs.PostError{Index: done, WRID: recvID(wrs[done]), Err: stop}
		}
	}
	return nil
}
