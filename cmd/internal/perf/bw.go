// Bandwidth loops, as perftest's run_iter_bw: the client keeps up to
// TxDepth WRs outstanding on every QP, signals one in CQMod, and stamps
// every post and every completion; the server, for SEND, keeps receives
// posted until every message has arrived.

package perf

import (
	"context"
	"errors"
	"time"

	"github.com/rnic/rnic/nic/verbs"
)

// bwTimes are the stamps of a bandwidth run, in ns from its start, one per
// operation in post order and in completion order.
type bwTimes struct {
	posted, completed []int64
	qpsDone           int // QPs whose every operation completed
}

// bwLoop is the client's state in a bandwidth run. The QPs that may
// post are kept in a queue (each at most once), so a pass of the loop
// costs what it posts and what it polls, not the number of QPs: with
// 10,000 QPs each a few WRs deep, a scan of all of them per poll would be
// most of the client's CPU.
type bwLoop struct {
	s          *side
	t          *bwTimes
	scnt, ccnt []int          // WRs posted and completed per QP
	wrs        []verbs.SendWR // one per QP, rewritten for each post: nic copies it
	queued     []bool         // QP i is in ready
	ready      qpRing         // the QPs that may post, in turn
	totS, totC int
	start      time.Time
	wcs        [16]verbs.WC
}

// runBW is the client's bandwidth loop.
func (s *side) runBW(ctx context.Context) (*bwTimes, error) {
	cfg := s.cfg
	nq := len(s.qps)
	total := cfg.Iters * nq
	l := &bwLoop{s: s, t: &bwTimes{posted: make([]int64, total), completed: make([]int64, total)},
		scnt: make([]int, nq), ccnt: make([]int, nq), wrs: make([]verbs.SendWR, nq),
		queued: make([]bool, nq), ready: qpRing{buf: make([]int, nq)}}
	for i := range l.wrs {
		l.wrs[i] = s.sendWR(i, 0, false)
		l.queued[i] = true
		l.ready.push(i)
	}
	prog := newProgress(cfg.Progress, string(cfg.Op)+" bw", total, cfg.Size)
	spin := newSpinnerFor(ctx, cfg.bytesBeforeCompletion())
	l.start = time.Now()
	for l.totC < total {
		posted := false
		// One turn for each QP queued now: one that goes to the back
		// waits for the next pass.
		for k := l.ready.n; k > 0 && l.totS-l.totC < cfg.Inflight; k-- {
			p, err := l.post(l.ready.pop())
			if err != nil {
				return nil, err
			}
			posted = posted || p
		}
		n, err := l.poll()
		if err != nil {
			return nil, err
		}
		if n > 0 || posted {
			spin.progressed()
		} else if err := spin.wait(s.scq); err != nil {
			return nil, err
		}
		prog.tick(l.totC)
	}
	for _, c := range l.ccnt {
		if c == cfg.Iters {
			l.t.qpsDone++
		}
	}
	return l.t, nil
}

// bytesBeforeCompletion is how many bytes a bandwidth loop may see move
// before its next send completion: only every CQMod-th WR of a QP is
// signalled, and the QPs share the wire, so every WR in flight may go
// first. 100 QPs of 64 KiB WRITEs at CQMod 100 move 655 MB before the
// first completion: under a second on an idle machine, and more than
// stallTimeout with both cores busy (perf's own test of 100 QPs was
// failed as stalled so while it was moving data).
func (c Config) bytesBeforeCompletion() int64 {
	wrs := min(c.Inflight, c.QPs*c.CQMod, c.QPs*c.Iters)
	return int64(max(wrs, 1)) * int64(c.Size)
}

// post posts on QP i what its depth, its iterations and its credit allow,
// and queues it for the next pass if only the engine's queue or the
// credit stopped it: a QP stopped by its depth is queued again by the
// completion that makes room, one that has posted all is done.
func (l *bwLoop) post(i int) (posted bool, err error) {
	s, cfg := l.s, l.s.cfg
	q, w := s.qps[i], &l.wrs[i]
	for l.scnt[i] < cfg.Iters && l.scnt[i]-l.ccnt[i] < cfg.TxDepth {
		if l.totS-l.totC >= cfg.Inflight {
			l.ready.push(i) // its turn comes again when WRs complete
			return posted, nil
		}
		if s.sendCredit != nil && l.scnt[i] >= s.sendCredit(i) {
			l.ready.push(i) // the credit grows without a completion here
			return posted, nil
		}
		seq := l.scnt[i]
		w.ID = wrID(i, seq)
		w.Flags = 0
		if seq%cfg.CQMod == cfg.CQMod-1 || seq == cfg.Iters-1 {
			w.Flags = verbs.SendSignaled
		}
		if w.Opcode == verbs.WRAtomicCmpSwp {
			w.CompareAdd, w.Swap = uint64(seq), uint64(seq)+1
		}
		l.t.posted[l.totS] = int64(time.Since(l.start))
		if err := q.qp.PostSend(w); err != nil {
			if errors.Is(err, verbs.ErrQueueFull) {
				l.ready.push(i) // the engine still holds WRs we counted done: poll
				return posted, nil
			}
			return posted, err
		}
		l.totS++
		l.scnt[i]++
		posted = true
	}
	l.queued[i] = false
	return posted, nil
}

// poll takes what the send CQ holds: a signaled completion retires its WR
// and every unsignaled one before it on the QP, and queues the QP if it
// has more to post.
func (l *bwLoop) poll() (int, error) {
	s, cfg := l.s, l.s.cfg
	n := s.scq.Poll(l.wcs[:])
	if n == 0 {
		return 0, nil
	}
	now := int64(time.Since(l.start))
	total := len(l.t.completed)
	for k := range l.wcs[:n] {
		wc := &l.wcs[k]
		if wc.Status != verbs.WCSuccess {
			return n, s.completionErr(wc)
		}
		i, seq := splitWRID(wc.WRID)
		for l.ccnt[i] <= seq && l.totC < total {
			l.t.completed[l.totC] = now
			l.totC++
			l.ccnt[i]++
		}
		if !l.queued[i] && l.scnt[i] < cfg.Iters {
			l.queued[i] = true
			l.ready.push(i)
		}
	}
	return n, nil
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
	spin := newSpinnerFor(ctx, int64(cfg.Size))
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

// qpRing is a FIFO of QP indexes, each in it at most once, so it never
// holds more than len(buf).
type qpRing struct {
	buf     []int
	head, n int
}

func (r *qpRing) push(i int) {
	r.buf[(r.head+r.n)%len(r.buf)] = i
	r.n++
}

func (r *qpRing) pop() int {
	i := r.buf[r.head]
	r.head = (r.head + 1) % len(r.buf)
	r.n--
	return i
}
