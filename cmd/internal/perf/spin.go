// Waiting for the NIC, as perftest busy-polls, with Go-specific turns.
//
// A spinner first spins, yielding the processor on each idle turn (so the
// NIC's goroutines run even with GOMAXPROCS=1). But a goroutine that only
// yields keeps the Go scheduler from polling the network: runtime.Gosched
// puts it back on the run queue, which the scheduler serves before it asks
// epoll, and the UDP sockets' readiness then waits for sysmon, up to 10 ms.
// So after spinTurns idle turns the spinner parks, on what will wake it
// when its wait is over:
//
//   - waiting for a completion: the CQ's completion channel (the NIC's
//     push wakes it at once);
//   - watching memory on a NIC in this process (a WRITE latency test):
//     the MR's watch (memory.Region.Watch), which the engine's receive
//     goroutine signals as it places the peer's WRITE.
//
// A NIC in another process (rnicd's, a libibverbs device) writes the
// completion rings and the buffers in shared memory, and nothing in this
// process needs the network meanwhile, so a latency loop on one spins as
// perftest does, for up to remoteSpin after its last progress, yielding
// its thread (nap.Yield) rather than only the goroutine so that the daemon
// gets the processor on a busy machine. Then it parks as above, or, for a
// memory watch, naps memNap at a time on a nap.Timer.
//
// Never on time.Sleep: the runtime rounds a sub-millisecond sleep up to a
// whole millisecond unless a socket wakes it first. Through rnicd nothing
// did, and a WRITE round trip took about half a millisecond; in-process an
// iWARP WRITE (no RDMAP acknowledgement, so no second socket event per
// round trip) took 13 times the raw TCP round trip while SEND took 1.04.
//
// A spinner also notices cancellation and gives up when nothing happened
// for stallTimeout (plus the time the bytes that may move before the
// completion it waits for take at stallRate: one message, or in a
// bandwidth loop with CQ moderation every message in flight),
// which means the peer has gone: a run never hangs.

package perf

import (
	"context"
	"errors"
	"runtime"
	"time"

	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/transport/clock/nap"
)

// Spinning and parking.
const (
	// spinTurns is how many idle turns spin before the spinner parks.
	// Few: while any goroutine spins, no processor is idle to poll the
	// network, so the NIC's receive goroutine is not woken; measured on
	// loopback, 64 turns gave 8-byte write latency 3.7x raw UDP, 1 turn
	// 2.3x, at no cost in bandwidth.
	spinTurns = 1
	// parkMax bounds one park on a channel (the stall and cancellation
	// checks run between parks).
	parkMax = time.Millisecond
	// remoteSpin is how long a latency loop on a NIC in another process
	// spins after its last progress: several round trips through rnicd
	// on a loaded machine (measured there: 200 us left the 8-byte WRITE
	// round trip at 1.0-1.5x the embedded one's only sometimes, 2 ms
	// steadily). It costs a waiting side one busy (yielding) core.
	remoteSpin = 2 * time.Millisecond
	// memNap is one nap of a memory watch beyond remoteSpin. Shorter
	// naps do not park: the timerfd has expired by the time it is read.
	memNap = 20 * time.Microsecond
	// stallRate is the slowest transfer that still counts as progress:
	// one message of n bytes may take n / stallRate on top of
	// stallTimeout before the loop gives up (a 1 GiB READ on a busy
	// machine takes tens of seconds, and completes only at its end).
	stallRate = 8 << 20 // bytes per second
)

// stallTimeout is how long a loop waits without any progress. It is far
// above the RC retry budget (7 retries × 67 ms at timeout 14), so a lost
// peer shows as a completion error first when there is one. A variable
// only so that a test can see a stall in less time.
var stallTimeout = 10 * time.Second

// stallFor is how long a loop waits for a completion that may have to
// wait for bytes to move (one message, or in a bandwidth loop every
// message that may go before the next signalled one).
func stallFor(bytes int64) time.Duration {
	whole, rest := bytes/stallRate, bytes%stallRate
	return stallTimeout + time.Duration(whole)*time.Second + time.Duration(rest*int64(time.Second)/stallRate)
}

// ErrStalled is returned when a loop made no progress for stallTimeout.
var ErrStalled = errors.New("perf: no progress: the peer stopped responding")

// memWatch is how a latency loop waits: for a NIC in this process, landed
// is its MR's watch; for one in another process, remote is set and nap
// is the memory watch's timer.
type memWatch struct {
	landed <-chan struct{}
	remote bool
	nap    *nap.Timer
}

// openWatch gives a latency test's side the means to wait.
func (s *side) openWatch() error {
	if s.cfg.Mode != ModeLat {
		return nil
	}
	if m := nic.MROf(s.mr); m != nil {
		s.watch = &memWatch{landed: m.Region().Watch()}
		return nil
	}
	t, err := nap.New()
	if err != nil {
		return err
	}
	s.watch = &memWatch{remote: true, nap: t}
	return nil
}

// closeWatch releases what openWatch took.
func (s *side) closeWatch() {
	if s.watch != nil && s.watch.nap != nil {
		s.watch.nap.Close()
	}
}

// spinner counts idle turns of a polling loop.
type spinner struct {
	ctx   context.Context
	w     *memWatch     // a latency loop's, else nil
	stall time.Duration // the wait without progress that ends the loop
	idle  int
	since time.Time
	armed bool
	timer *time.Timer
	// ticking: timer is armed and has not been received from.
	ticking bool
}

func newSpinner(ctx context.Context) *spinner {
	return &spinner{ctx: ctx, stall: stallTimeout, since: time.Now()}
}

// newSpinnerFor is a spinner for a loop whose every completion may wait
// for bytes to move.
func newSpinnerFor(ctx context.Context, bytes int64) *spinner {
	s := newSpinner(ctx)
	s.stall = stallFor(bytes)
	return s
}

// reset makes s a fresh spinner for a wait of at most stall without
// progress, keeping its park timer.
func (s *spinner) reset(stall time.Duration) {
	s.stall, s.idle, s.armed, s.since = stall, 0, false, time.Now()
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
// watches memory (a latency loop's spinner has w).
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
	if s.w != nil && s.w.remote && time.Since(s.since) < remoteSpin {
		nap.Yield()
		return nil
	}
	if cq == nil {
		return s.waitMemory()
	}
	if !s.armed {
		// Arm, and let the caller poll once more: a completion that came
		// before the arm fires nothing.
		s.armed = true
		return cq.ReqNotify(false)
	}
	s.park(cq.Notify())
	s.armed = false
	return nil
}

// waitMemory is an idle turn of a memory watch past its spinning.
func (s *spinner) waitMemory() error {
	switch {
	case s.w == nil:
		return errors.New("perf: memory watch without the means")
	case s.w.landed != nil:
		s.park(s.w.landed)
		return nil
	}
	return s.w.nap.Nap(memNap)
}

// park waits for c, at most about parkMax. The timer is armed lazily:
// it is left running after a park that c ended and re-armed only once it
// has fired, so a latency loop that parks twice a round trip does not
// restart and stop a runtime timer each time. A park may thus end early,
// at a tick armed by an earlier one; the caller only polls again.
func (s *spinner) park(c <-chan struct{}) {
	if s.timer == nil {
		s.timer = time.NewTimer(parkMax)
	} else if !s.ticking {
		s.timer.Reset(parkMax)
	}
	s.ticking = true
	select {
	case <-c:
	case <-s.timer.C:
		s.ticking = false
	case <-s.ctx.Done():
	}
}
