// Latency loops, one operation at a time, as perftest's run_iter_lat*:
//
//   - WRITE: ping-pong of RDMA WRITEs; each side learns that the other's
//     write has landed by polling the last byte of its target region,
//     which carries the iteration number;
//   - SEND: ping-pong of SENDs, each side waiting for its receive
//     completion;
//   - READ and atomics: the client posts one and waits for its completion;
//     the server's CPU takes no part.
//
// With several QPs, iteration k uses QP k mod QPs. The client stamps every
// post and the end; a sample is the time from one post to the next (the
// last one to the end).

package perf

import (
	"context"
	"time"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
)

// runLat is the client's latency loop; it returns the samples in ns.
func (s *side) runLat(ctx context.Context) ([]int64, error) {
	if s.cfg.Op == OpWrite && s.serverFirst {
		return s.runWriteLatSecond(ctx)
	}
	cfg := s.cfg
	nq := len(s.qps)
	total := cfg.Iters * nq
	stamps := make([]int64, total+1)
	prog := newProgress(cfg.Progress, string(cfg.Op)+" lat", total, 0)
	start := time.Now()
	for k := 0; k < total; k++ {
		i, seq := k%nq, k/nq
		if cfg.Op == OpWrite {
			s.qps[i].src[cfg.Size-1] = byte(seq + 1)
		}
		stamps[k] = int64(time.Since(start))
		if err := s.postOne(i, seq); err != nil {
			return nil, err
		}
		if err := s.awaitLat(ctx, i, seq); err != nil {
			return nil, err
		}
		prog.tick(k + 1)
	}
	stamps[total] = int64(time.Since(start))
	samples := make([]int64, total)
	for k := range samples {
		samples[k] = stamps[k+1] - stamps[k]
	}
	return samples, nil
}

// runWriteLatSecond is the client's WRITE latency loop when the server
// writes first, as perftest's write_lat server does: the client answers
// each of the server's WRITEs, and a sample is the time from one of its
// WRITEs to the next (the server's first WRITE starts the clock; the last
// answer ends no round trip), so there are one fewer samples than
// iterations.
func (s *side) runWriteLatSecond(ctx context.Context) ([]int64, error) {
	cfg := s.cfg
	nq := len(s.qps)
	total := cfg.Iters * nq
	stamps := make([]int64, total)
	prog := newProgress(cfg.Progress, "write lat", total, 0)
	start := time.Now()
	for k := 0; k < total; k++ {
		i, seq := k%nq, k/nq
		if err := s.awaitLat(ctx, i, seq); err != nil {
			return nil, err
		}
		s.qps[i].src[cfg.Size-1] = byte(seq + 1)
		stamps[k] = int64(time.Since(start))
		if err := s.postOne(i, seq); err != nil {
			return nil, err
		}
		prog.tick(k + 1)
	}
	samples := make([]int64, max(total-1, 0))
	for k := range samples {
		samples[k] = stamps[k+1] - stamps[k]
	}
	return samples, nil
}

// serveLat is the server's part of a WRITE or SEND latency test: it waits
// for each of the client's messages and answers it on the same QP; or,
// in a WRITE test against perftest (serverFirst), writes first and then
// waits for each answer.
func (s *side) serveLat(ctx context.Context) error {
	cfg := s.cfg
	nq := len(s.qps)
	// The times of the server's posts: its own samples, post to post, as
	// perftest's server prints them.
	s.latPosts = make([]int64, 0, cfg.Iters*nq)
	start := time.Now()
	if cfg.Op == OpWrite && s.serverFirst {
		for k := 0; k < cfg.Iters*nq; k++ {
			i, seq := k%nq, k/nq
			s.qps[i].src[cfg.Size-1] = byte(seq + 1)
			s.latPosts = append(s.latPosts, int64(time.Since(start)))
			if err := s.postOne(i, seq); err != nil {
				return err
			}
			if err := s.awaitLat(ctx, i, seq); err != nil {
				return err
			}
		}
		return nil
	}
	for k := 0; k < cfg.Iters*nq; k++ {
		i, seq := k%nq, k/nq
		if err := s.awaitLat(ctx, i, seq); err != nil {
			return err
		}
		if cfg.Op == OpWrite {
			s.qps[i].src[cfg.Size-1] = byte(seq + 1)
		}
		s.latPosts = append(s.latPosts, int64(time.Since(start)))
		if err := s.postOne(i, seq); err != nil {
			return err
		}
	}
	// The last answer's own completion is not waited for: the client may
	// tear its QP down as soon as the answer has landed.
	return nil
}

// latState is what a latency loop reuses from one iteration to the next:
// a round trip is a few microseconds, and a work request, its SGE, a
// completion array and a spinner (with its park timer) built anew for
// each (and PostSend's variadic slice) were eight heap allocations per side per round trip, and the
// garbage collector's work after them.
type latState struct {
	wr   verbs.SendWR
	wrs  [1]*verbs.SendWR // PostSend's variadic argument, &wr
	sge  [1]verbs.SGE
	wcs  [4]verbs.WC
	spin *spinner
}

// postOne posts operation seq on QP i, signaled.
func (s *side) postOne(i, seq int) error {
	l := &s.lat
	s.fillWR(&l.wr, l.sge[:], i, seq, true)
	l.wrs[0] = &l.wr
	return s.qps[i].qp.PostSend(l.wrs[:]...)
}

// latSpinner is the latency loop's spinner, reset for a new wait.
func (s *side) latSpinner(ctx context.Context) *spinner {
	sp := s.lat.spin
	if sp == nil || sp.ctx != ctx {
		sp = newSpinner(ctx)
		s.lat.spin = sp
	}
	sp.reset(stallFor(int64(s.cfg.Size)))
	sp.w = s.watch
	return sp
}

// awaitLat waits for the event that ends iteration seq on QP i: the peer's
// WRITE landing or SEND arriving (then a receive is re-posted), or the
// completion of this side's own READ or atomic. Send completions are
// drained on the way.
func (s *side) awaitLat(ctx context.Context, i, seq int) error {
	cfg := s.cfg
	q := s.qps[i]
	spin := s.latSpinner(ctx)
	var waitOn ibv.CQ // nil: the WRITE test watches memory
	switch cfg.Op {
	case OpSend:
		waitOn = s.rcq
	case OpRead, OpAtomic:
		waitOn = s.scq
	}
	wcs := &s.lat.wcs
	for {
		n, err := s.drainSend(wcs[:])
		if err != nil {
			return err
		}
		switch cfg.Op {
		case OpWrite:
			if loadByte(q.dst, cfg.Size-1) == byte(seq+1) {
				return nil
			}
		case OpSend:
			if m := s.rcq.Poll(wcs[:1]); m > 0 {
				wc := &wcs[0]
				if wc.Status != verbs.WCSuccess {
					return s.completionErr(wc)
				}
				return s.postRecv(int(wc.WRID), 1)
			}
		default: // READ, atomics: this operation's own completion
			for k := range wcs[:n] {
				if qi, sq := splitWRID(wcs[k].WRID); qi == i && sq == seq {
					return nil
				}
			}
		}
		if n > 0 {
			spin.progressed()
		} else if err := spin.wait(waitOn); err != nil {
			return err
		}
	}
}

// serverLatStats are a latency server's own figures: the times between
// its posts (one fewer than its posts), or nil without two posts.
func (s *side) serverLatStats() *LatStats {
	if len(s.latPosts) < 2 {
		return nil
	}
	samples := make([]int64, len(s.latPosts)-1)
	for k := range samples {
		samples[k] = s.latPosts[k+1] - s.latPosts[k]
	}
	st := latStats(samples, s.cfg.rttFactor())
	return &st
}
