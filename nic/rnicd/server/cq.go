// Completion queues: the daemon's ibv CQ and the client's completion ring,
// and the mover that carries completions from one to the other.
//
// The mover sleeps armed on the ibv CQ and, woken, moves what it holds into
// the ring while the ring has room. The ring is the CQ the client sees, so
// the two together hold the CQ's size: an in-process NIC's CQ counts what
// the ring still holds (nic.CQ.SetHolder) and overflows when the two are
// full, as a CQ of that size does on Linux rxe (nic/cq.go): the completion
// is lost, the client gets IBV_EVENT_CQ_ERR, and a send completion's QP
// goes on. So the ring has room for whatever the ibv CQ holds, and a
// client that does not poll stops nothing. Another NIC's CQ (passthrough)
// cannot count the ring: a client that does not poll fills the ring, the
// mover waits for room, and that CQ overruns as its hardware does.
//
// An in-process CQ's fired arm does the mover's work at once, on the
// engine's goroutine (fireNow, nic.CQ.SetFire): the completions go into
// the ring and the client's channel is signalled before the engine
// completes anything else, so the CQs of one channel signal in the order
// their completions came, as a kernel completion channel queues its
// events. A program that waits for one CQ's event at a time on a channel
// it shares among CQs (perftest's -e) takes another CQ's event otherwise.
//
// Completion events: the client's ReqNotify sets the ring's arm word. The
// mover, having published completions, fires the CQ's notifier (its slot
// of its completion channel, cqnotify.go) if the arm asks for them: any
// completion for ArmNext; for ArmSolicited an
// unsuccessful one, or one the ibv CQ reported as solicited. Only the ibv
// CQ knows solicitedness, through a solicited-only arm of its own, so the
// mover arms it the way the client last armed (for any completion until
// the client first arms for solicited ones): in solicited mode unsolicited
// completions do not wake the mover, which polls on a backing-off timer so
// that a client polling its ring still sees them.
//
// A client arming the other kind than the mover's state bit says asks for
// the switch (OpArmCQ) and waits for it, so the arm is in force when
// ReqNotify returns. An ibv CQ armed for any completion cannot be narrowed
// to solicited ones until it fires; the mover fires it itself (an
// in-process NIC's CQ has Solicited for that) and re-arms. Where that is
// impossible, or a completion slipped in while the ibv CQ was not armed,
// the completion cannot be classified and fires the event: a spurious
// event is harmless, a lost one is not.

package server

import (
	"fmt"
	"sync"
	"time"

	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/verbs"
)

func init() {
	Register(proto.OpDestroyCQ, handleDestroy[*cqObj](kindCQ))
	Register(proto.OpKickCQ, handleKickCQ)
	Register(proto.OpArmCQ, handleArmCQ)
}

// Mover timing.
const (
	// moveBatch is how many completions the mover takes per Poll.
	moveBatch = 64
	// solPollMin and solPollMax bound the mover's polling period while
	// armed for solicited completions only.
	solPollMin = 100 * time.Microsecond
	solPollMax = 10 * time.Millisecond
	// spaceRetry is how often a mover waiting for ring space looks
	// again if no kick comes.
	spaceRetry = time.Millisecond
	// armWait bounds how long OpArmCQ waits for the mover.
	armWait = 100 * time.Millisecond
)

// What the ibv CQ is armed for, as far as the mover knows: an arm lasts
// until it fires.
const (
	nicArmNone = iota
	nicArmNext
	nicArmSol
)

type cqObj struct {
	s      *Session
	h      uint32
	cq     ibv.CQ
	mem    *ringMem
	ring   *proto.CQRing
	notify cqNotifier // how a fired arm reaches the client
	evMu   sync.Mutex // event's use of ring, against RESIZE_CQ's change of it

	kick chan struct{}      // room was made
	arm  chan chan struct{} // the client changed the kind of its arm; close when done
	stop chan struct{}
	done chan struct{}

	// The mover's state, also touched by fireNow on an engine's
	// goroutine: mu guards it.
	mu   sync.Mutex
	gone bool   // destroyed: fireNow does nothing
	prod uint32 // the producer index; never read back from the ring
	// base is what the ibv CQ had given out before the ring's
	// producer index started (at 0, or at a resize): the ring holds
	// taken - base - Cons of what was ever taken (holdRing).
	base     uint32
	wcs      [moveBatch]verbs.WC
	nicArm   int  // nicArmNone, nicArmNext or nicArmSol
	solMode  bool // the client arms for solicited completions
	solSeen  bool // a solicited completion arrived since the last fire decision
	unsorted bool // armed from unarmed: what the next move finds came unclassified
	timer    *time.Timer
}

func (c *cqObj) kind() objKind     { return kindCQ }
func (c *cqObj) handle() uint32    { return c.h }
func (c *cqObj) session() *Session { return c.s }
func (c *cqObj) event(e verbs.AsyncEvent) {
	if e == verbs.EventCQErr {
		c.evMu.Lock()
		c.ring.Flags.Or(proto.FlagOverrun)
		c.evMu.Unlock()
	}
}

func (c *cqObj) destroy(s *Session, _ bool) error {
	c.halt()
	c.mu.Lock()
	c.gone = true
	c.mu.Unlock()
	if err := c.cq.Destroy(); err != nil {
		// Still in use by QPs: the CQ lives on, and so must its mover.
		c.mu.Lock()
		c.gone = false
		c.mu.Unlock()
		c.start()
		return err
	}
	s.dev.disown(c.cq)
	c.mem.free()
	c.notify.release()
	s.unreserve(kindCQ, 0)
	return nil
}

func (c *cqObj) start() {
	c.stop, c.done = make(chan struct{}), make(chan struct{})
	go c.run()
}

// halt stops the mover and waits for it.
func (c *cqObj) halt() {
	close(c.stop)
	<-c.done
}

// newCQ creates a CQ of cqe entries, its ring and its mover; notify makes
// what it signals fired arms through, last.
func newCQ(s *Session, cqe uint32, notify func() (cqNotifier, error)) (*cqObj, proto.CQLayout, error) {
	if cqe == 0 || cqe > proto.MaxRingSlots {
		return nil, proto.CQLayout{}, fmt.Errorf("rnicd: create CQ of %d entries: %w", cqe, verbs.ErrInvalid)
	}
	layout := proto.CQLayout{Slots: proto.RingSlots(cqe), Cap: cqe}
	size := layout.Size()
	if err := s.reserve(kindCQ, 0); err != nil {
		return nil, layout, err
	}
	c := &cqObj{s: s, notify: noNotifier{}, kick: make(chan struct{}, 1), arm: make(chan chan struct{})}
	err := func() error {
		if err := s.checkRing(size); err != nil {
			return err
		}
		cq, err := s.dev.dev.CreateCQ(int(cqe))
		if err != nil {
			return err
		}
		c.cq = cq
		if c.mem, err = s.newRingMem(size); err != nil {
			return err
		}
		if c.ring, err = proto.NewCQRing(c.mem.mem, layout); err != nil {
			return err
		}
		n, err := notify()
		if err != nil {
			return err
		}
		c.notify = n
		return nil
	}()
	if err != nil {
		if c.cq != nil {
			c.cq.Destroy()
		}
		if c.mem != nil {
			c.mem.free()
		}
		s.unreserve(kindCQ, 0)
		return nil, layout, err
	}
	c.timer = time.NewTimer(time.Hour)
	c.timer.Stop()
	c.holdRing()
	if n := nic.CQOf(c.cq); n != nil {
		n.SetFire(c.fireNow)
	}
	c.h = s.newHandle()
	s.dev.own(c.cq, c)
	s.insert(c)
	c.start()
	return c, layout, nil
}

func handleKickCQ(s *Session, req *Request, _ *Reply) error {
	var m proto.Handle
	if err := req.Decode(&m); err != nil {
		return err
	}
	c, err := lookup[*cqObj](s, m.H, kindCQ)
	if err != nil {
		return err
	}
	select {
	case c.kick <- struct{}{}:
	default:
	}
	return nil
}

// handleArmCQ has the mover re-arm the ibv CQ for what the client's arm
// word now asks, and answers once it has (or after armWait: the mover is
// busy moving, and will look at the arm word before it next sleeps).
func handleArmCQ(s *Session, req *Request, rep *Reply) error {
	var m proto.Handle
	if err := req.Decode(&m); err != nil {
		return err
	}
	c, err := lookup[*cqObj](s, m.H, kindCQ)
	if err != nil {
		return err
	}
	done := make(chan struct{})
	t := time.NewTimer(armWait)
	defer t.Stop()
	select {
	case c.arm <- done:
		select {
		case <-done:
		case <-t.C:
		}
	case <-t.C:
	}
	rep.Set(&proto.Empty{})
	return nil
}

// fireNow is an in-process CQ's fired arm (nic.CQ.SetFire), on the
// engine's goroutine as it completes: the completions go into the ring
// and the client's channel is signalled now, in the engine's order, and
// the CQ is armed again. A ring without room (a consumer index gone
// wrong) is left to the mover.
//
// From the arm firing to the arm again the ibv CQ is unarmed: a
// completion another engine goroutine (another QP's drainer) pushes
// then fires nothing, so after arming it looks once more, as step does.
// Without that look the completion waited for some later one (rnic perf
// --mw stalled on a BIND_MW completion whose QP was the only one busy).
func (c *cqObj) fireNow() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gone {
		return
	}
	c.fired()
	if c.moveFire() {
		return
	}
	if afterFireMove != nil {
		afterFireMove(c.cq)
	}
	if c.rearm() != nil {
		return // a destroyed CQ
	}
	c.moveFire()
}

// afterFireMove, set by a test, runs in fireNow between its move and its
// arming again.
var afterFireMove func(ibv.CQ)

// moveFire moves and fires; a ring without room kicks the mover, and
// reports true.
func (c *cqObj) moveFire() (full bool) {
	moved, bad, full := c.move()
	c.fire(moved, bad)
	if full {
		select {
		case c.kick <- struct{}{}:
		default:
		}
	}
	return full
}

// step is one round of the mover: it moves what the ibv CQ holds and
// fires; if that was nothing it arms the ibv CQ for what the client waits
// for and looks once more (a completion may have come before the arm).
// idle: nothing came, the mover may sleep; full: the ring has no room.
func (c *cqObj) step() (idle, full bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	moved, bad, full := c.move()
	c.fire(moved, bad)
	if full || moved > 0 {
		return false, full, nil
	}
	if err := c.rearm(); err != nil {
		return false, false, err
	}
	if moved, bad, full = c.move(); moved > 0 || full {
		c.fire(moved, bad)
		return false, full, nil
	}
	return true, false, nil
}

// locked runs f with the mover's state locked.
func (c *cqObj) locked(f func()) {
	c.mu.Lock()
	f()
	c.mu.Unlock()
}

// run is the mover.
func (c *cqObj) run() {
	defer close(c.done)
	solPoll := solPollMin
	for {
		idle, full, err := c.step()
		if err != nil {
			<-c.stop // the CQ is gone; only halt remains
			return
		}
		if full {
			if !c.waitSpace() {
				return
			}
			continue
		}
		if !idle {
			solPoll = solPollMin
			continue
		}
		var tick <-chan time.Time
		c.mu.Lock()
		solMode := c.solMode
		c.mu.Unlock()
		if solMode {
			// Unsolicited completions do not wake the mover: look on
			// a timer for a client that polls.
			c.timer.Reset(solPoll)
			tick = c.timer.C
			solPoll = min(2*solPoll, solPollMax)
		}
		select {
		case <-c.cq.Notify():
			c.locked(c.fired)
		case <-c.kick:
			solPoll = solPollMin
		case done := <-c.arm:
			c.locked(func() { c.rearm() })
			close(done)
			solPoll = solPollMin
		case <-tick:
		case <-c.stop:
			c.timer.Stop()
			return
		}
		c.timer.Stop()
	}
}

// rearm arms the ibv CQ for the client's current kind of arm, taking an
// arm that fired into account first.
func (c *cqObj) rearm() error {
	select {
	case <-c.cq.Notify():
		c.fired()
	default:
	}
	c.chooseMode()
	if c.solMode && c.nicArm == nicArmNext {
		c.disarm()
	}
	if c.nicArm == nicArmNone || c.nicArm == nicArmSol && !c.solMode {
		if err := c.cq.ReqNotify(c.solMode); err != nil {
			return err
		}
		fromNone := c.nicArm == nicArmNone
		c.nicArm = nicArmNext
		if c.solMode {
			c.nicArm = nicArmSol
		}
		if c.solMode && fromNone {
			// Completions that came since the last arm fired went
			// unseen by any arm: move them now, as unclassified, so
			// that whatever comes later is the new arm's to judge.
			c.unsorted = true
			moved, bad, _ := c.move()
			c.fire(moved, bad)
		}
	}
	return nil
}

// chooseMode sets solMode from the client's arm: a solicited-only arm
// switches the mover to it, an arm for any completion switches it back;
// no arm keeps the mode, so a client that re-arms for solicited
// completions after each event finds the ibv CQ armed that way already.
func (c *cqObj) chooseMode() {
	switch c.ring.Arm.Load() {
	case proto.ArmNext:
		c.solMode = false
	case proto.ArmSolicited:
		c.solMode = true
	}
	if c.solMode {
		c.ring.Mover.Or(proto.MoverSolicited)
	} else {
		c.ring.Mover.And(^uint32(proto.MoverSolicited))
	}
}

// disarm cancels a pending arm for any completion: an in-process NIC's CQ
// can (nic.CQ.Disarm). Other CQs keep the arm; its firing is then
// unclassifiable.
func (c *cqObj) disarm() {
	n := nic.CQOf(c.cq)
	if n == nil {
		return
	}
	n.Disarm()
	// Whatever completion came meanwhile is in the CQ unclassified;
	// rearm, arming from none, marks it so.
	c.nicArm = nicArmNone
}

// fired records that the ibv CQ's arm fired. A solicited-only arm firing
// means a solicited (or unsuccessful) completion arrived. An arm for any
// completion firing while the client waits for a solicited one cannot say
// which it was: the event fires.
func (c *cqObj) fired() {
	switch c.nicArm {
	case nicArmSol:
		c.solSeen = true
	case nicArmNext:
		if c.ring.Arm.Load() == proto.ArmSolicited {
			c.solSeen = true
		}
	}
	c.nicArm = nicArmNone
}

// holdRing has an in-process NIC's CQ count what the ring holds against
// its size. Everything the mover takes goes into the ring (move takes no
// more than the ring has room for), so the ring holds what was taken since
// base less what the client consumed. It is called again when the ring
// changes: SetHolder waits for a Push using the old ring, which may then
// be unmapped.
func (c *cqObj) holdRing() {
	n := nic.CQOf(c.cq)
	if n == nil {
		return
	}
	ring, base, stats := c.ring, c.base, &c.s.srv.stats
	n.SetHolder(func(taken uint32) uint32 {
		held := taken - base - ring.Cons.Load()
		if held > ring.Slots() {
			// A consumer index ahead of the producer or far behind:
			// the CQ has no room, the client's own loss.
			stats.ringIndexErrors.Add(1)
		}
		return held
	})
}

// move moves completions from the ibv CQ into the ring while it has room.
// full reports a ring without room for what may wait in the ibv CQ: an
// in-process CQ that counts the ring (holdRing) holds nothing more when
// the ring is full, and the mover need not wait for room.
func (c *cqObj) move() (moved int, bad, full bool) {
	defer func() {
		if moved > 0 && c.unsorted {
			c.solSeen = true
		}
		c.unsorted = false
	}()
	for {
		used := c.prod - c.ring.Cons.Load()
		if used >= c.ring.Cap {
			if used > c.ring.Slots() {
				// The client published a consumer index ahead of
				// the producer or far behind: it can only hurt its
				// own completions. Treat the ring as full.
				c.s.srv.stats.ringIndexErrors.Add(1)
				c.s.counts.clientErrors.Add(1)
			}
			if n := nic.CQOf(c.cq); n != nil && n.Len() == 0 {
				return moved, bad, false
			}
			return moved, bad, true
		}
		want := min(int(c.ring.Cap-used), moveBatch)
		n := c.cq.Poll(c.wcs[:want])
		for i := range n {
			if c.wcs[i].Status != verbs.WCSuccess {
				bad = true
			}
			proto.PutWC(c.ring.Slot(c.prod), &c.wcs[i])
			c.prod++
		}
		if n > 0 {
			c.ring.Prod.Store(c.prod)
			c.s.counts.completions.Add(uint64(n))
		}
		moved += n
		if n < want {
			return moved, bad, false
		}
	}
}

// fire signals the client through its notifier if its arm asks for what was
// just published.
func (c *cqObj) fire(moved int, bad bool) {
	a := c.ring.Arm.Load()
	var want bool
	switch a {
	case proto.ArmNext:
		want = moved > 0
	case proto.ArmSolicited:
		want = bad || c.solSeen
	}
	if a != proto.ArmSolicited || want {
		c.solSeen = false
	}
	if want && c.ring.Arm.CompareAndSwap(a, proto.ArmNone) {
		c.notify.signal()
	}
}

// waitSpace waits until the client polls room into the ring (it kicks
// when it sees MoverWantsSpace) or a retry period passes. It returns false
// when the mover must stop.
func (c *cqObj) waitSpace() bool {
	c.ring.Mover.Or(proto.MoverWantsSpace)
	defer c.ring.Mover.And(^uint32(proto.MoverWantsSpace))
	c.mu.Lock()
	used := c.prod - c.ring.Cons.Load()
	c.mu.Unlock()
	if used < c.ring.Cap {
		return true
	}
	c.timer.Reset(spaceRetry)
	defer c.timer.Stop()
	select {
	case <-c.kick:
	case done := <-c.arm:
		c.locked(c.chooseMode) // re-armed for real once there is room to move
		close(done)
	case <-c.timer.C:
	case <-c.stop:
		return false
	}
	return true
}
