// Waiting in PostRecv until the daemon has put the receive WQEs into its
// NIC (proto/ring.go: RQ done), so that a message arriving after PostRecv
// returns finds them, as on an in-process NIC.
//
// The drainer usually takes them within tens of microseconds, woken by
// the doorbell, so the wait spins first, yielding its thread (nap.Yield)
// so that the daemon gets the processor on a busy machine. Then it naps on a timerfd
// (internal/nap), not time.Sleep: nothing in this process wakes the Go
// runtime when the daemon writes RQ done, and a sub-millisecond sleep
// then lasts a whole millisecond. That was most of the ~0.7 ms a SEND
// round trip through rnicd took (each side re-posts its receive). A
// daemon that does not come within recvWait is left to it.

package client

import (
	"sync"
	"time"

	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/transport/clock/nap"
)

// Receive wait timing.
const (
	// recvSpin is how long the wait spins before it naps: a wake-up of
	// the daemon's drainer and its post, with room for a busy machine.
	recvSpin = 200 * time.Microsecond
	// recvNap is one nap; shorter naps do not park (the timerfd expires
	// before it is read) and would spin.
	recvNap  = 20 * time.Microsecond
	recvWait = time.Second
)

// waitRecvs waits until RQ done of r has reached prod.
func (d *Device) waitRecvs(r *proto.WorkRings, prod uint32) {
	taken := func() bool { return int32(r.RQDone.Load()-prod) >= 0 || d.isGone.Load() }
	if taken() {
		return
	}
	start := time.Now()
	for time.Since(start) < recvSpin {
		nap.Yield()
		if taken() {
			return
		}
	}
	t := d.naps.get()
	if t == nil {
		return // no timerfd to nap on: PostRecv returns, as after recvWait
	}
	defer d.naps.put(t)
	for !taken() && time.Since(start) < recvWait {
		if t.Nap(recvNap) != nil {
			return
		}
	}
}

// napPool holds a device's nap timers (one file descriptor each), so
// that a PostRecv takes one without a system call, and PostRecvs on
// several queues at once each have their own.
type napPool struct {
	mu     sync.Mutex
	free   []*nap.Timer
	closed bool
}

// get takes a timer from the pool or makes one; nil if it cannot.
func (p *napPool) get() *nap.Timer {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	if n := len(p.free); n > 0 {
		t := p.free[n-1]
		p.free = p.free[:n-1]
		return t
	}
	t, err := nap.New()
	if err != nil {
		return nil
	}
	return t
}

// put returns t to the pool.
func (p *napPool) put(t *nap.Timer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		t.Close()
		return
	}
	p.free = append(p.free, t)
}

// close closes the pooled timers; those in use close when put back.
func (p *napPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, t := range p.free {
		t.Close()
	}
	p.free = nil
}
