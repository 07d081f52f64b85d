// The completion loop of rc_pingpong: the client sends first; each side
// sends its next message once both its previous send and the peer's
// message have completed (the pending mask), until both counts reach
// iters. Receives are re-posted in bulk when one is left, as
// pp_post_recv's callers do.

package pingpong

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"time"

	"github.com/rnic/rnic/nic/verbs"
)

// pingpong runs the exchange and fills res's Elapsed, CQEvents and
// InvalidPages.
func (p *peer) pingpong(ctx context.Context, res *Result) error {
	cfg := p.cfg
	client := cfg.Server != ""
	pending := recvWRID
	if client {
		if cfg.Check {
			fillPattern(p.message())
		}
		if err := p.postSend(); err != nil {
			return err
		}
		pending |= sendWRID
	}
	routs := cfg.RxDepth
	scnt, rcnt := 0, 0
	bad := map[int]bool{}
	var wcs [2]verbs.WC

	start := time.Now()
	for rcnt < cfg.Iters || scnt < cfg.Iters {
		if cfg.Events {
			// ibv_get_cq_event, then re-arm before polling, so that a
			// completion arriving after the poll fires the next event.
			select {
			case <-p.cq.Notify():
			case <-ctx.Done():
				return ctx.Err()
			}
			res.CQEvents++
			if err := p.cq.ReqNotify(false); err != nil {
				return fmt.Errorf("pingpong: couldn't request CQ notification: %w", err)
			}
		}
		for {
			n, err := p.poll(ctx, wcs[:])
			if err != nil {
				return err
			}
			for _, wc := range wcs[:n] {
				if wc.Status != verbs.WCSuccess {
					return &CompletionError{Status: wc.Status, WRID: wc.WRID}
				}
				switch wc.WRID {
				case sendWRID:
					scnt++
				case recvWRID:
					if routs--; routs <= 1 {
						if err := p.postRecv(cfg.RxDepth - routs); err != nil {
							return err
						}
						routs = cfg.RxDepth
					}
					rcnt++
					if cfg.Check {
						checkPattern(p.message(), bad)
					}
				default:
					return fmt.Errorf("pingpong: completion for unknown wr_id %d", int(wc.WRID))
				}
				pending &^= int(wc.WRID)
				if scnt < cfg.Iters && pending == 0 {
					if err := p.postSend(); err != nil {
						return err
					}
					pending = recvWRID | sendWRID
				}
			}
			// rc_pingpong takes at most two completions per event; taking
			// all that are there is the same when, as here, no more than
			// two can be outstanding, and cannot strand one otherwise.
			if !cfg.Events || n < len(wcs) {
				break
			}
		}
	}
	// gettimeofday's resolution, so the printed figures are computed from
	// what rc_pingpong would have measured.
	res.Elapsed = time.Since(start).Truncate(time.Microsecond)
	for page := range bad {
		res.InvalidPages = append(res.InvalidPages, page)
	}
	sort.Ints(res.InvalidPages)
	return nil
}

// poll returns the next completions: in event mode what the CQ holds (maybe
// none); otherwise it waits until there is at least one, as rc_pingpong's
// do { ibv_poll_cq } while (ne < 1) does. It spins first, yielding the
// processor on each empty poll so the NIC's goroutines run even with
// GOMAXPROCS=1. But a goroutine that only yields keeps the Go scheduler
// from asking epoll whether the UDP sockets are readable (Gosched requeues
// it ahead of that), leaving it to sysmon, every 10 ms: two spinning
// processes on a small machine then crawl at milliseconds per exchange. So
// after a few dozen empty polls it parks on the CQ's completion channel,
// which the NIC's completion wakes at once and which lets the processor
// poll the network meanwhile.
func (p *peer) poll(ctx context.Context, wcs []verbs.WC) (int, error) {
	if p.cfg.Events {
		return p.cq.Poll(wcs), nil
	}
	armed := false
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for spins := 1; ; spins++ {
		if n := p.cq.Poll(wcs); n > 0 {
			return n, nil
		}
		switch {
		case spins < spinTurns:
			runtime.Gosched()
			continue
		case !armed:
			// Arm, then poll once more: a completion that came before
			// the arm fires nothing.
			if err := p.cq.ReqNotify(false); err != nil {
				return 0, fmt.Errorf("pingpong: couldn't request CQ notification: %w", err)
			}
			armed = true
			continue
		}
		if timer == nil {
			timer = time.NewTimer(parkMax)
		} else {
			timer.Reset(parkMax)
		}
		select {
		case <-p.cq.Notify():
		case <-timer.C:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		armed = false
	}
}

// Waiting in polling mode: idle polls before parking, and the longest park
// between two looks at the CQ.
const (
	spinTurns = 64
	parkMax   = time.Millisecond
)

// pattern is the byte at offset i of a --chk message: it changes within
// every page and from page to page, so a misplaced or stale page shows.
func pattern(i int) byte { return byte(i) ^ byte(i>>12)*31 ^ 0x5a }

func fillPattern(buf []byte) {
	for i := range buf {
		buf[i] = pattern(i)
	}
}

// checkPattern adds to bad every page of buf that differs from the pattern.
func checkPattern(buf []byte, bad map[int]bool) {
	for i := 0; i < len(buf); i++ {
		if buf[i] != pattern(i) {
			bad[i/PageSize] = true
			i = (i/PageSize+1)*PageSize - 1 // on to the next page
		}
	}
}
