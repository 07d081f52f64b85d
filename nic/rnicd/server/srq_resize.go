// RESIZE_SRQ (proto/srq_resize.go): ibv_modify_srq(IBV_SRQ_MAX_WR). With
// the drainer halted, every WQE the client wrote goes to the SRQ, the SRQ
// is resized (its own checks: the WQEs it holds, the armed limit), what
// waited for room follows, and the drainer moves onto a new, empty ring of
// the new size whose indices start where the old one's producer was.

package server

import (
	"fmt"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/verbs"
)

func init() { Register(proto.OpResizeSRQ, handleResizeSRQ) }

func handleResizeSRQ(s *Session, req *Request, rep *Reply) error {
	var m proto.ResizeSRQReq
	if err := req.Decode(&m); err != nil {
		return err
	}
	if m.MaxWR == 0 || m.MaxWR > proto.MaxRingSlots {
		return fmt.Errorf("rnicd: resize SRQ to %d WRs: %w", m.MaxWR, verbs.ErrInvalid)
	}
	o, err := lookup[*srqObj](s, m.SRQ, kindSRQ)
	if err != nil {
		return err
	}
	mod, ok := o.srq.(ibv.SRQModifier)
	if !ok {
		return fmt.Errorf("rnicd: resize SRQ: %w", verbs.ErrNotSupported)
	}
	layout := proto.RingLayout{RQSlots: proto.RingSlots(m.MaxWR), RQCap: m.MaxWR, RQSlotSize: o.d.rings.RQ.SlotSize()}
	if err := layout.Validate(); err != nil {
		return err
	}
	if err := s.checkRing(layout.Size()); err != nil {
		return err
	}
	mem, err := s.newRingMem(layout.Size())
	if err != nil {
		return err
	}
	rings, err := proto.NewWorkRings(mem.mem, layout)
	if err == nil {
		o.d.halt()
		o.d.mu.Lock()
		err = o.resize(mod, mem, rings)
		o.d.mu.Unlock()
		o.d.start()
	}
	if err != nil {
		mem.free()
		return err
	}
	rep.Set(&proto.CreateSRQReply{SRQ: o.h, Ring: layout, Place: mem.place()}, mem.fds()...)
	rep.After(mem.sent)
	return nil
}

// resize moves o onto rings (in mem), the drainer halted and its lock
// held. On error o keeps its ring and size.
func (o *srqObj) resize(mod ibv.SRQModifier, mem *ringMem, rings *proto.WorkRings) error {
	d := o.d
	d.drain()
	if d.rq.broken {
		return fmt.Errorf("rnicd: resize SRQ: its ring is broken: %w", verbs.ErrInvalid)
	}
	if err := mod.ModifySRQ(verbs.SRQAttr{MaxWR: int(rings.RQ.Cap)}, verbs.SRQMaxWR); err != nil {
		return err
	}
	d.drain() // WQEs that waited for room in the SRQ, if it grew
	old := d.rings
	rings.RQ.Prod.Store(d.rq.cons)
	rings.RQ.Cons.Store(d.rq.cons)
	rings.RQDone.Store(old.RQDone.Load())
	rings.Bell.Store(old.Bell.Load())
	d.rings = rings
	o.mem.free()
	o.mem = mem
	return nil
}
