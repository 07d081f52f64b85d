// Bandwidth loops, as perftest's run_iter_bw: the client keeps up to
// TxDepth WRs outstanding on every QP, signals one in CQMod, and stamps
// every post and every completion; the server, for SEND, keeps receives
// posted until every message has arrived.

package perf

import (
	"context"
	"errors"
	"time"

	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/verbs"
)

// bwTimes are the stamps of a bandwidth run, in ns from its start, one per
// operation in post order and in completion order.
type bwTimes struct {
	posted, completed []int64
}

// runBW is the client's bandwidth loop.
func (s *side) runBW(ctx context.Context) (*bwTimes, error) {
	cfg := s.cfg
	nq := len(s.qps)
	total := cfg.Iters * nq
	t := &bwTimes{posted: make([]int64, total), completed: make([]int64, total)}
	scnt := make([]int, nq)
	ccnt := make([]int, nq)
	// One WR per QP, rewritten for each post: nic copies it.
	wrs := make([]verbs.SendWR, nq)
	for i := range wrs {
		wrs[i] = s.sendWR(i, 0, false)
	}
	prog := newProgress(cfg.Progress, string(cfg.Op)+" bw", total, cfg.Size)
	spin := newSpinnerFor(ctx, cfg.Size)
	var wcs [16]verbs.WC
	totS, totC := 0, 0
	start := time.Now()
	for totC < total {
		posted := false
		for i, q := range s.qps {
			for scnt[i] < cfg.Iters && scnt[i]-ccnt[i] < cfg.TxDepth && (s.sendCredit == nil || scnt[i] < s.sendCredit(i)) {
				seq := scnt[i]
				w := &wrs[i]
				w.ID = wrID(i, seq)
				w.Flags = 0
				if seq%cfg.CQMod == cfg.CQMod-1 || seq == cfg.Iters-1 {
					w.Flags = verbs.SendSignaled
				}
				if w.Opcode == verbs.WRAtomicCmpSwp {
					w.CompareAdd, w.Swap = uint64(seq), uint64(seq)+1
				}
				t.posted[totS] = int64(time.Since(start))
				if err := q.qp.PostSend(w); err != nil {
					if errors.Is(err, nic.ErrQueueFull) {
						break // the engine still holds WRs we counted done: poll
					}
					return nil, err
				}
				totS++
				scnt[i]++
				posted = true
			}
		}
		n := s.scq.Poll(wcs[:])
		if n > 0 {
			now := int64(time.Since(start))
			for k := range wcs[:n] {
				wc := &wcs[k]
				if wc.Status != verbs.WCSuccess {
					return nil, s.completionErr(wc)
				}
				// A signaled completion retires its WR and every
				// unsignaled one before it on the QP.
				i, seq := splitWRID(wc.WRID)
				for ccnt[i] <= seq && totC < total {
					t.completed[totC] = now
					totC++
					ccnt[i]++
				}
			}
		}
		if n > 0 || posted {
			spin.progressed()
		} else if err := spin.wait(s.scq); err != nil {
			return nil, err
		}
		prog.tick(totC)
	}
	return t, nil
}

// receiveAll is the server's part of a SEND bandwidth test: it waits for
// Iters messages on every QP, re-posting one receive per message while
// more are to come, so that up to RxDepth stay posted. posted holds what
// is posted so far. It stamps the first and the last polls that found
// messages (side.recvFirst, recvLast): the server's own figures, as
// perftest's SEND bw server prints.
func (s *side) receiveAll(ctx context.Context, posted []int) error {
	cfg := s.cfg
	total := cfg.Iters * len(s.qps)
	spin := newSpinnerFor(ctx, cfg.Size)
	var wcs [16]verbs.WC
	done := make([]int, len(s.qps))
	for got := 0; got < total; {
		n := s.rcq.Poll(wcs[:])
		if n == 0 {
			if err := spin.wait(s.rcq); err != nil {
				return s.stalledReceiving(err, got, total)
			}
			continue
		}
		spin.progressed()
		now := time.Now()
		if got == 0 {
			s.recvFirst = now
		}
		s.recvLast = now
		for k := range wcs[:n] {
			wc := &wcs[k]
			if wc.Status != verbs.WCSuccess {
				return s.completionErr(wc)
			}
			got++
			i := int(wc.WRID)
			done[i]++
			if s.recvDone != nil {
				if err := s.recvDone(i, done[i]); err != nil {
					return err
				}
			}
			if posted[i] < cfg.Iters {
				if err := s.postRecv(i, 1); err != nil {
					return err
				}
				posted[i]++
				if s.onRecv != nil {
					if err := s.onRecv(i); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}
