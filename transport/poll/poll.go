// Package poll bounds the busy-polling of sockets.
//
// A goroutine that parks in Go's netpoller when its socket is empty is
// woken, when the next packet comes, through epoll_wait in a sleeping
// thread: on a virtual machine (where CI runs) waking an idle CPU costs
// ~25 µs, more than rnic's whole work for a small message. An 8-byte RDMA
// WRITE ping-pong between two processes took 48 µs a round trip, 1.6× raw
// UDP, almost all of it wake-ups. So a reader that has just received keeps
// polling its socket, non-blocking, for a while before it parks: during a
// conversation the next packet finds it awake.
//
// Neither the window nor whether to poll adapts: a conversation is fast
// only while both ends poll, so an end that learned from the gaps or the
// misses of a conversation in which the other end parked (~50 µs a round
// trip) stopped polling for good, and both were tried and measured so.
// On a busy machine polling costs its window of CPU per packet.
//
// A poller holds its processor (P) while it polls: a goroutine that
// yielded would stay runnable, and the Go scheduler polls the network
// only when it has nothing runnable, so every other socket of the process
// would wait for sysmon (up to 10 ms). Holding a P is safe only while
// another is free, so at most GOMAXPROCS-1 readers of a process poll at a
// time (none with GOMAXPROCS=1); a reader that cannot get a slot parks at
// once, as it always did. Nor does it yield its thread: measured, a
// sched_yield per turn lost the gain.
//
// A poller that holds its P also keeps the datagrams of the process's
// other sockets waiting: a reader parked on one of them is woken through
// epoll by another thread, and on a busy machine that thread waits for a
// CPU behind the poller's own (autogroup/cgroup scheduling gives the
// process's threads one share, and the poller spends it), so the datagram
// waited for the end of the window. Measured with both cores busy, one
// process with two NICs (rnic perf): an 8-byte WRITE round trip took
// 52 µs, the window, against 8.5 µs without polling. So the readers of a
// process list their sockets (Watch), and a poller looks at the others'
// on each turn (one poll(2)): when one of them has a datagram, it parks,
// which frees its P to run that socket's reader at once.
//
// And a poller yields its P when a goroutine waits for one (every
// checkEvery a poller reads the runtime's count of runnable goroutines). The
// other P is not always free to run such a goroutine: the runtime wakes a
// thread to steal the goroutine a receive readied, and that thread may
// hold the other P while it sleeps (a steal waits a few microseconds for
// the victim, longer on a busy machine); a goroutine the netpoller readies
// meanwhile (another NIC's reader of the same process, after a parked
// wait) then waited in the global run queue for the poller's whole
// window. Either look alone brought an 8-byte RoCEv2 WRITE or SEND
// ping-pong between two NICs of one process on a loaded 2-core machine
// from 52 µs (the window and a little) to 7-9 µs; READ needed both
// (58-65 µs with the socket look alone, 11-12 µs with both), the
// bandwidths unchanged. Yielding every few microseconds whether or not
// anything waited helped WRITE as much but made READ four times slower
// (its parked reader was then readied only when the poller parked; why,
// the runtime's trace did not show).
package poll

import (
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Time is the longest a reader polls after its last packet.
const Time = 50 * time.Microsecond

// polling is how many readers of the process poll now.
var polling atomic.Int32

// acquire takes a polling slot if one is free.
func acquire() bool {
	limit := int32(runtime.GOMAXPROCS(0) - 1)
	for {
		n := polling.Load()
		if n >= limit {
			return false
		}
		if polling.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// Polling returns how many readers of the process poll now.
func Polling() int { return int(polling.Load()) }

// A Poller is one reader's polling state; a reader uses it from one
// goroutine. The zero value polls.
type Poller struct {
	until  time.Time        // poll until then
	held   atomic.Bool      // holds a polling slot (read by other pollers)
	queued []metrics.Sample // the runnable count's sample (yieldIfQueued)
	fd     int32            // the reader's socket (Watch)
	// others are the other watched sockets, as of registry version
	// othersOf; pfds their poll(2) set.
	others   []*Poller
	othersOf uint64
	pfds     []unix.PollFd
}

// Received notes that the socket just gave a packet.
func (p *Poller) Received() { p.until = time.Now().Add(Time) }

// Again says, when the socket is empty, whether to try it again now
// rather than park. When it returns false the reader parks; its slot is
// free again.
func (p *Poller) Again() bool {
	now := time.Now()
	if now.Before(p.until) && (p.held.Load() || acquire()) {
		p.held.Store(true)
		if !p.othersWaiting() {
			if mayCheck(now) {
				p.yieldIfQueued()
			}
			return true
		}
		p.until = time.Time{} // another socket's datagram needs this P
	}
	p.Release()
	return false
}

// Release gives up the slot, if held (a reader that stops reading).
func (p *Poller) Release() {
	if p.held.Load() {
		p.held.Store(false)
		polling.Add(-1)
	}
}

// checkEvery is how often the pollers of a process look for goroutines
// waiting for a processor, one poller a time: a look (runtime/metrics)
// costs ~0.2 µs and takes the scheduler's lock, which every processor of
// a large machine takes when it runs out of work.
const checkEvery = 5 * time.Microsecond

// lastCheck is when a poller of the process last looked (ns since start).
var lastCheck atomic.Int64

// start is the origin of lastCheck's clock (monotonic).
var start = time.Now()

// mayCheck says whether a poller looks now: none has for checkEvery.
func mayCheck(now time.Time) bool {
	t := int64(now.Sub(start))
	last := lastCheck.Load()
	return t-last >= int64(checkEvery) && lastCheck.CompareAndSwap(last, t)
}

// yieldIfQueued lets goroutines that wait for a processor run first.
func (p *Poller) yieldIfQueued() {
	if p.queued == nil {
		p.queued = []metrics.Sample{{Name: "/sched/goroutines/runnable:goroutines"}}
	}
	metrics.Read(p.queued)
	if v := p.queued[0].Value; v.Kind() == metrics.KindUint64 && v.Uint64() > 0 {
		runtime.Gosched()
	}
}
