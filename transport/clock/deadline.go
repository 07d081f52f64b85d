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
	if d.t == nil {
		d.t = d.clk.AfterFunc(dur, d.cb)
		return
	}
	d.t.Reset(dur)
}

// Stop cancels the deadline.
func (d *Deadline) Stop() {
	d.active = false
	if d.t != nil {
		d.t.Stop()
	}
}

// Active reports whether the deadline is set.
func (d *Deadline) Active() bool { return d.active }

func (d *Deadline) expired() {
	d.lock()
	defer d.unlock()
	if !d.active {
		return
	}
	if now := d.clk.Now(); now < d.deadline {
		d.t.Reset(d.deadline - now) // a stale callback of an earlier Set
		return
	}
	d.active = false
	d.fire()
}
