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

// ppLoop is the loop's state: messages sent and received, receives
// posted, the pending mask, and the pages that failed the check.
type ppLoop struct {
	p          *peer
	scnt, rcnt int
	routs      int
	pending    int
	bad        map[int]bool
}

// pingpong runs the exchange and fills res's Elapsed, CQEvents and
// InvalidPages.
func (p *peer) pingpong(ctx context.Context, res *Result) error {
	cfg := p.cfg
	l := &ppLoop{p: p, routs: cfg.RxDepth, pending: recvWRID, bad: map[int]bool{}}
	if cfg.Server != "" { // the client sends first
		if cfg.Check {
			fillPattern(p.message())
		}
		if err := p.postSend(); err != nil {
			return err
		}
		l.pending |= sendWRID
	}
	var wcs [2]verbs.WC
	start := time.Now()
	for l.rcnt < cfg.Iters || l.scnt < cfg.Iters {
		if cfg.Events {
			if err := p.awaitEvent(ctx, res); err != nil {
				return err
			}
		}
		for {
			n, err := p.poll(ctx, wcs[:])
			if err != nil {
				return err
			}
			for _, wc := range wcs[:n] {
				if err := l.complete(wc); err != nil {
					return err
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
	for page := range l.bad {
		res.InvalidPages = append(res.InvalidPages, page)
	}
	sort.Ints(res.InvalidPages)
	return nil
}

// awaitEvent is ibv_get_cq_event, then the re-arm before polling, so that
// a completion arriving after the poll fires the next event.
func (p *peer) awaitEvent(ctx context.Context, res *Result) error {
	select {
	case <-p.cq.Notify():
	case <-ctx.Done():
		return ctx.Err()
	}
	res.CQEvents++
	if err := p.cq.ReqNotify(false); err != nil {
		return fmt.Errorf("pingpong: couldn't request CQ notification: %w", err)
	}
	return nil
}

// complete takes one completion: it counts it, re-posts the receives
// when one is left, checks a message, and sends the next one once both
// the last send and the peer's message are in.
func (l *ppLoop) complete(wc verbs.WC) error {
	p, cfg := l.p, l.p.cfg
	if wc.Status != verbs.WCSuccess {
		return &CompletionError{Status: wc.Status, WRID: wc.WRID}
	}
	switch wc.WRID {
	case sendWRID:
		l.scnt++
	case recvWRID:
		if l.routs--; l.routs <= 1 {
			if err := p.postRecv(cfg.RxDepth - l.routs); err != nil {
				return err
			}
			l.routs = cfg.RxDepth
		}
		l.rcnt++
		if cfg.Check {
			checkPattern(p.message(), l.bad)
		}
	default:
		return fmt.Errorf("pingpong: completion for unknown wr_id %d", int(wc.WRID))
	}
	l.pending &^= int(wc.WRID)
	if l.scnt < cfg.Iters && l.pending == 0 {
		if err := p.postSend(); err != nil {
			return err
		}
		l.pending = recvWRID | sendWRID
	}
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

// pattern is the byte at offset i of a --chk message. The first byte of
// every page is 0, as ibv_rc_pingpong --chk writes it and checks it (its
// i / page_size % sizeof(char)); the other bytes change within every page
// and from page to page, so a misplaced or stale page shows between two
// rnic peers.
func pattern(i int) byte {
	if i%PageSize == 0 {
		return 0
	}
	return byte(i) ^ byte(i>>12)*31 ^ 0x5a
}

// rcPingpongFill is what ibv_rc_pingpong's buffer holds outside the bytes
// --chk sets (it memsets the buffer to 0x7b): a real rc_pingpong peer
// sends pages of 0 then 0x7b.
const rcPingpongFill = 0x7b

func fillPattern(buf []byte) {
	for i := range buf {
		buf[i] = pattern(i)
	}
}

// checkPattern adds to bad every page of buf that is neither rnic's
// pattern nor what an ibv_rc_pingpong --chk peer sends (0, then 0x7b): a
// page must start with 0, as rc_pingpong checks, and hold one of the two
// fills whole.
func checkPattern(buf []byte, bad map[int]bool) {
	for start := 0; start < len(buf); start += PageSize {
		page := buf[start:min(start+PageSize, len(buf))]
		if !pageIsPattern(page, start) && !pageIsRCPingpong(page) {
			bad[start/PageSize] = true
		}
	}
}

func pageIsPattern(page []byte, start int) bool {
	for i, b := range page {
		if b != pattern(start+i) {
			return false
		}
	}
	return true
}

func pageIsRCPingpong(page []byte) bool {
	if page[0] != 0 {
		return false
	}
	for _, b := range page[1:] {
		if b != rcPingpongFill {
			return false
		}
	}
	return true
}
