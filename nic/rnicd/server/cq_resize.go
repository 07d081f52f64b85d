// RESIZE_CQ (proto/cq_resize.go): ibv_resize_cq. What the client posted
// before it asked goes to the engine first, and the mover stops having
// moved what the engine completed (so that, as on rxe, a send the engine
// completes at once counts against the new size); the engine's CQ is
// resized (it refuses if it holds more than the new size);
// the completions the client has not polled move, in order, to the start
// of a new ring of the new size (refused too if they are more); the
// arm, overrun flag and solicited mode carry over; the mover starts again
// on the new ring.

package server

import (
	"fmt"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/verbs"
)

func init() { Register(proto.OpResizeCQ, handleResizeCQ) }

func handleResizeCQ(s *Session, req *Request, rep *Reply) error {
	var m proto.ResizeCQReq
	if err := req.Decode(&m); err != nil {
		return err
	}
	if m.CQE == 0 || m.CQE > proto.MaxRingSlots {
		return fmt.Errorf("rnicd: resize CQ to %d entries: %w", m.CQE, verbs.ErrInvalid)
	}
	c, err := lookup[*cqObj](s, m.CQ, kindCQ)
	if err != nil {
		return err
	}
	rz, ok := c.cq.(ibv.ResizeCQ)
	if !ok {
		return fmt.Errorf("rnicd: resize CQ: %w", verbs.ErrNotSupported)
	}
	layout := proto.CQLayout{Slots: proto.RingSlots(m.CQE), Cap: m.CQE}
	if err := s.checkRing(layout.Size()); err != nil {
		return err
	}
	mem, err := s.newRingMem(layout.Size())
	if err != nil {
		return err
	}
	ring, err := proto.NewCQRing(mem.mem, layout)
	if err == nil {
		s.drainQPs()
		c.halt()
		c.locked(func() {
			c.move() // what the engine completed counts as waiting too
			err = c.resize(rz, mem, ring)
		})
		c.start()
	}
	if err != nil {
		mem.free()
		return err
	}
	var slot uint32
	if cs, ok := c.notify.(channelSlot); ok {
		slot = cs.slot
	}
	rep.Set(&proto.CreateCQOnReply{CreateCQReply: proto.CreateCQReply{CQ: c.h, Ring: layout, Place: mem.place()}, Slot: slot}, mem.fds()...)
	rep.After(mem.sent)
	return nil
}

// resize moves c onto ring (in mem), the mover halted. On error c is
// unchanged.
func (c *cqObj) resize(rz ibv.ResizeCQ, mem *ringMem, ring *proto.CQRing) error {
	cons := c.ring.Cons.Load()
	n := c.prod - cons
	if n > c.ring.Slots() {
		return fmt.Errorf("rnicd: resize CQ: the client's consumer index %d is not within its ring (producer %d): %w", cons, c.prod, verbs.ErrInvalid)
	}
	if n > ring.Cap {
		return fmt.Errorf("rnicd: resize CQ to %d entries: %d completions not polled: %w", ring.Cap, n, verbs.ErrInvalid)
	}
	if err := rz.Resize(int(ring.Cap)); err != nil {
		return err
	}
	for i := range n {
		copy(ring.Slot(i), c.ring.Slot(cons+i))
	}
	ring.Prod.Store(n)
	ring.Arm.Store(c.ring.Arm.Load())
	ring.Mover.Store(c.ring.Mover.Load() &^ proto.MoverWantsSpace)
	c.evMu.Lock()
	ring.Flags.Store(c.ring.Flags.Load())
	old := c.mem
	c.mem, c.ring, c.prod = mem, ring, n
	c.base += cons // taken - base was the old producer index
	c.evMu.Unlock()
	c.holdRing()
	old.free()
	return nil
}

// drainQPs posts what the client wrote into the session's work rings.
func (s *Session) drainQPs() {
	for _, o := range s.objectsOf(kindQP) {
		q := o.(*qpObj)
		q.d.mu.Lock()
		q.d.drain()
		q.d.mu.Unlock()
	}
}
