// Waiting for the NIC, as perftest busy-polls, with one Go-specific turn.
//
// A spinner first spins, yielding the processor on each idle turn (so the
// NIC's goroutines run even with GOMAXPROCS=1). But a goroutine that only
// yields keeps the Go scheduler from polling the network: runtime.Gosched
// puts it back on the run queue, which the scheduler serves before it asks
// epoll, and the UDP sockets' readiness then waits for sysmon, up to 10 ms.
// So after spinTurns idle turns the spinner parks: on the CQ's completion
// channel when it waits for a completion (the NIC's push wakes it at
// once), or for parkSleep when it watches memory. A parked goroutine lets
// its processor poll the network.
//
// A spinner also notices cancellation and gives up when nothing happened
// for stallTimeout (plus the time a large message may take at stallRate),
// which means the peer has gone: a run never hangs.

package perf

import (
	"context"
	"errors"
	"runtime"
	"time"

	"github.com/rnic/rnic/nic/ibv"
)

// Spinning and parking.
const (
	// spinTurns is how many idle turns spin before the spinner parks.
	// Few: while any goroutine spins, no processor is idle to poll the
	// network, so the NIC's receive goroutine is not woken; measured on
	// loopback, 64 turns gave 8-byte write latency 3.7x raw UDP, 1 turn
	// 2.3x, at no cost in bandwidth.
	spinTurns = 1
	// parkMax bounds one park on a CQ (the stall and cancellation checks
	// run between parks).
	parkMax = time.Millisecond
	// parkSleep is one park while watching memory.
	parkSleep = 5 * time.Microsecond
	// stallTimeout is how long a loop waits without any progress. It is
	// far above the RC retry budget (7 retries × 67 ms at timeout 14), so
	// a lost peer shows as a completion error first when there is one.
	stallTimeout = 10 * time.Second
	// stallRate is the slowest transfer that still counts as progress:
	// one message of n bytes may take n / stallRate on top of
	// stallTimeout before the loop gives up (a 1 GiB READ on a busy
	// machine takes tens of seconds, and completes only at its end).
	stallRate = 8 << 20 // bytes per second
)

// stallFor is how long a loop waits for the completion of a message of
// size bytes.
func stallFor(size int) time.Duration {
	return stallTimeout + time.Duration(int64(size)*int64(time.Second)/stallRate)
}

// ErrStalled is returned when a loop made no progress for stallTimeout.
var ErrStalled = errors.New("perf: no progress: the peer stopped responding")

// spinner counts idle turns of a polling loop.
type spinner struct {
	ctx   context.Context
	stall time.Duration // the wait without progress that ends the loop
	idle  int
	since time.Time
	armed bool
	timer *time.Timer
}

func newSpinner(ctx context.Context) *spinner {
	return &spinner{ctx: ctx, stall: stallTimeout, since: time.Now()}
}

// newSpinnerFor is a spinner for a loop whose every completion may wait
// for a message of size bytes.
func newSpinnerFor(ctx context.Context, size int) *spinner {
	s := newSpinner(ctx)
	s.stall = stallFor(size)
	return s
}

// progressed resets the spinner after a turn that did something.
func (s *spinner) progressed() {
	if s.idle != 0 {
		s.idle, s.armed = 0, false
		s.since = time.Now()
	}
}

// wait is called on a turn that found nothing to do; the caller polls
// again after it returns. cq is what the loop waits for, or nil when it
// watches memory.
func (s *spinner) wait(cq ibv.CQ) error {
	s.idle++
	if s.idle < spinTurns {
		runtime.Gosched()
		return nil
	}
	if err := s.ctx.Err(); err != nil {
		return err
	}
	if time.Since(s.since) > s.stall {
		return ErrStalled
	}
	if cq == nil {
		time.Sleep(parkSleep)
		return nil
	}
	if !s.armed {
		// Arm, and let the caller poll once more: a completion that came
		// before the arm fires nothing.
		s.armed = true
		return cq.ReqNotify(false)
	}
	if s.timer == nil {
		s.timer = time.NewTimer(parkMax)
	} else {
		s.timer.Reset(parkMax)
	}
	select {
	case <-cq.Notify():
	case <-s.timer.C:
	case <-s.ctx.Done():
	}
	s.timer.Stop()
	s.armed = false
	return nil
}
