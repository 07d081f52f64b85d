package clock

import "time"

// Deadline is a restartable one-shot for an engine that keeps its state
// under a lock: Set moves the deadline, Stop cancels it, and fire runs with
// the lock held once the deadline has passed. The clock timer underneath is
// created once and then only Reset, so restarting a Deadline (per ACK, per
// retry) allocates nothing. A callback that raced with a later Set or Stop
// sees the new deadline or the stopped state and does nothing, which is
// why fire never runs early or after Stop.
//
// The timer is armed lazily: a request's ACK timer is set at every send
// and stopped at every ACK, and restarting and stopping a runtime timer
// for each (four timer-heap operations per round trip of a ping-pong) was
// the largest timer cost of a small WRITE's round trip. So Set leaves an
// armed timer alone when it fires no later than the new deadline (its
// callback, finding the deadline not yet passed, arms it for the rest),
// and Stop leaves the timer to fire into a stopped Deadline, which does
// nothing. A deadline moved later and later costs one callback per
// period instead of a timer operation per packet; fire still runs exactly
// at the deadline.
//
// Set, Stop and Active must be called with the owner's lock held.
type Deadline struct {
	clk      Clock
	lock     func()
	unlock   func()
	fire     func()
	cb       func()
	deadline time.Duration
	active   bool
	t        Timer
	armed    bool          // t's callback is due (or running, not yet locked)
	armedAt  time.Duration // when t's callback is due, if armed
}

// Init prepares d: lock and unlock take and release the owner's lock,
// fire is the expiry action. A Deadline must be initialised before use.
func (d *Deadline) Init(clk Clock, lock, unlock, fire func()) {
	d.clk, d.lock, d.unlock, d.fire = clk, lock, unlock, fire
	d.cb = d.expired
}

// Set (re)starts the deadline to pass after dur.
func (d *Deadline) Set(dur time.Duration) {
	d.deadline, d.active = d.clk.Now()+dur, true
	if d.armed && d.armedAt <= d.deadline {
		return // the callback comes first and re-arms for the rest
	}
	d.arm(dur)
}

// arm makes the timer call back after dur.
func (d *Deadline) arm(dur time.Duration) {
	d.armed, d.armedAt = true, d.clk.Now()+dur
	if d.t == nil {
		d.t = d.clk.AfterFunc(dur, d.cb)
		return
	}
	d.t.Reset(dur)
}

// Stop cancels the deadline. The timer, if armed, still calls back, and
// finds nothing to do.
func (d *Deadline) Stop() { d.active = false }

// Active reports whether the deadline is set.
func (d *Deadline) Active() bool { return d.active }

func (d *Deadline) expired() {
	d.lock()
	defer d.unlock()
	d.armed = false
	if !d.active {
		return
	}
	if now := d.clk.Now(); now < d.deadline {
		d.arm(d.deadline - now) // set later since the timer was armed
		return
	}
	d.active = false
	d.fire()
}
