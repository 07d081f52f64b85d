// Completion queues: Poll reads the completion ring the daemon fills, with
// no system call; ReqNotify sets the ring's arm word; completion events
// arrive through the session's completion channel (channel.go), whose one
// goroutine turns them into each CQ's Notify.

package client

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/verbs"
)

// CQ is a completion queue of the daemon.
type CQ struct {
	d      *Device
	h      uint32
	cqe    int
	mem    ringRef
	ring   *proto.CQRing
	notify chan struct{}
	ch     *cqChannel // the session's completion channel, which feeds notify
	slot   uint32     // the CQ's slot in ch's event set
	kick   []byte     // the KICK_CQ notice, encoded once

	mu   sync.Mutex // Poll
	cons uint32

	dead     atomic.Bool
	retired  sync.Once
	released sync.Once
}

var _ ibv.CQ = (*CQ)(nil)

// CreateCQ creates a CQ of cqe entries.
func (d *Device) CreateCQ(cqe int) (ibv.CQ, error) {
	if cqe <= 0 || cqe > proto.MaxRingSlots {
		return nil, fmt.Errorf("rnicd: create CQ of %d entries: %w", cqe, verbs.ErrInvalid)
	}
	var rep proto.CreateCQOnReply
	d.arena.mu.Lock()
	ch, err := d.compChannel()
	if err != nil {
		d.arena.mu.Unlock()
		return nil, err
	}
	fds, err := d.call(proto.OpCreateCQOn, &proto.CreateCQOnReq{CQE: uint32(cqe), Channel: ch.h}, nil, &rep)
	if err != nil {
		d.arena.mu.Unlock()
		return nil, err
	}
	c := &CQ{d: d, h: rep.CQ, cqe: cqe, notify: make(chan struct{}, 1), ch: ch, slot: rep.Slot}
	err = c.setup(&rep.CreateCQReply, fds)
	d.arena.mu.Unlock()
	if err != nil {
		d.call(proto.OpDestroyCQ, &proto.Handle{H: rep.CQ}, nil, &proto.Empty{})
		c.mem.release()
		return nil, err
	}
	ch.add(c.slot, c)
	d.mu.Lock()
	d.cqs[c.h] = c
	d.mu.Unlock()
	if d.goneError() != nil {
		c.retire() // the reader has retired the others already
	}
	return c, nil
}

// setup finds the ring of a CREATE_CQ_ON reply in the arena, mapping its
// chunk if the reply brings it; its events come through the channel.
// The caller holds d.arena.mu.
func (c *CQ) setup(rep *proto.CreateCQReply, fds []int) error {
	if err := rep.Ring.Validate(); err != nil {
		closeFDs(fds)
		return err
	}
	mem, ref, rest, err := c.d.takeRings("CREATE_CQ_ON", rep.Place, rep.Ring.Size(), fds, 0)
	c.mem = ref
	if err != nil {
		closeFDs(rest)
		return err
	}
	ring, err := proto.NewCQRing(mem, rep.Ring)
	if err != nil {
		closeFDs(rest)
		return err
	}
	c.ring = ring
	c.kick = proto.AppendMessage(nil, proto.Header{Op: proto.OpKickCQ, Kind: proto.KindNotice}, &proto.Handle{H: c.h})
	return nil
}

// Poll moves up to len(wcs) completions into wcs. It makes no system call
// and allocates nothing; it returns 0 once the CQ is destroyed or the
// daemon gone.
func (c *CQ) Poll(wcs []verbs.WC) int {
	// Nothing new: no lock (the consumer index in the ring is this
	// process's own; the daemon only reads it).
	if c.dead.Load() || c.d.isGone.Load() || c.ring.Prod.Load() == c.ring.Cons.Load() {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead.Load() {
		return 0
	}
	avail := c.ring.Prod.Load() - c.cons
	if avail > c.ring.Slots() {
		return 0 // a daemon writing nonsense
	}
	n := min(int(avail), len(wcs))
	for i := range n {
		proto.GetWC(c.ring.Slot(c.cons), &wcs[i])
		c.cons++
	}
	if n > 0 {
		c.ring.Cons.Store(c.cons)
		// The daemon waits for room: tell it there is.
		if m := c.ring.Mover.Load(); m&proto.MoverWantsSpace != 0 &&
			c.ring.Mover.CompareAndSwap(m, m&^proto.MoverWantsSpace) {
			c.d.notice(c.kick)
		}
	}
	return n
}

// ReqNotify arms the CQ: the next completion (the next solicited or
// unsuccessful one if solicitedOnly) signals Notify once.
func (c *CQ) ReqNotify(solicitedOnly bool) error {
	c.mu.Lock() // the ring stays mapped meanwhile
	if err := c.usable(); err != nil {
		c.mu.Unlock()
		return err
	}
	if solicitedOnly {
		// An arm for any completion stays one (IBTA: the reverse of
		// widening has no effect).
		c.ring.Arm.CompareAndSwap(proto.ArmNone, proto.ArmSolicited)
	} else {
		c.ring.Arm.Store(proto.ArmNext)
	}
	// The daemon's CQ is armed for the other kind: have it re-armed
	// before returning, so the arm is in force as on an in-process CQ.
	wantSol := c.ring.Arm.Load() == proto.ArmSolicited
	moverSol := c.ring.Mover.Load()&proto.MoverSolicited != 0
	switchArm := moverSol != wantSol
	c.mu.Unlock()
	if switchArm {
		if _, err := c.d.call(proto.OpArmCQ, &proto.Handle{H: c.h}, nil, &proto.Empty{}); err != nil {
			return err
		}
	}
	return nil
}

// Notify receives a value when an armed CQ gets a completion. It is
// closed when the CQ is destroyed or the daemon gone.
func (c *CQ) Notify() <-chan struct{} { return c.notify }

// Err is non-nil once the CQ overran or the daemon is gone.
func (c *CQ) Err() error {
	if err := c.d.goneError(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.dead.Load() && c.ring.Flags.Load()&proto.FlagOverrun != 0 {
		return fmt.Errorf("rnicd: CQ of %d entries: %w", c.cqe, verbs.ErrCQOverrun)
	}
	return nil
}

func (c *CQ) usable() error {
	if err := c.d.goneError(); err != nil {
		return err
	}
	if c.dead.Load() {
		return fmt.Errorf("rnicd: CQ: %w", verbs.ErrDestroyed)
	}
	return nil
}

// Destroy destroys the CQ.
func (c *CQ) Destroy() error {
	if c.dead.Load() {
		return fmt.Errorf("rnicd: destroy CQ: %w", verbs.ErrDestroyed)
	}
	_, err := c.d.call(proto.OpDestroyCQ, &proto.Handle{H: c.h}, nil, &proto.Empty{})
	if err != nil && c.d.goneError() == nil {
		return err
	}
	c.d.mu.Lock()
	delete(c.d.cqs, c.h)
	c.d.mu.Unlock()
	c.release()
	return err
}

// retire ends the CQ's use: Poll returns 0, verbs fail, Notify closes. The ring stays mapped, so a Poll racing
// with the daemon's departure reads memory that is still there.
func (c *CQ) retire() {
	c.retired.Do(func() {
		c.mu.Lock()
		c.dead.Store(true)
		c.mu.Unlock()
		c.ch.remove(c.slot, c)
	})
}

// release retires the CQ and unmaps its ring (Destroy, Device.Close: no
// verb of the program's may run on the CQ any more).
func (c *CQ) release() {
	c.retire()
	c.released.Do(c.mem.release)
}

// cq returns cq as a CQ of this device.
func (d *Device) cq(cq ibv.CQ) (*CQ, error) {
	c, ok := cq.(*CQ)
	if !ok || c.d != d {
		return nil, ibv.ErrForeign
	}
	return c, nil
}
