// Shared receive queues: the daemon's ibv SRQ, the client's receive ring
// and its drainer. A client error on the ring raises SRQ_ERR.

package server

import (
	"fmt"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/verbs"
)

func init() {
	Register(proto.OpCreateSRQ, handleCreateSRQ)
	Register(proto.OpDestroySRQ, handleDestroy[*srqObj](kindSRQ))
}

type srqObj struct {
	s   *Session
	h   uint32
	srq ibv.SRQ
	mem *ringMem
	d   *drainer
}

func (o *srqObj) kind() objKind          { return kindSRQ }
func (o *srqObj) handle() uint32         { return o.h }
func (o *srqObj) session() *Session      { return o.s }
func (o *srqObj) event(verbs.AsyncEvent) {}

func (o *srqObj) destroy(s *Session, _ bool) error {
	o.d.halt()
	if err := o.srq.Destroy(); err != nil {
		o.d.start() // still in use by QPs
		return err
	}
	o.d.bell.close()
	s.dev.disown(o.srq)
	o.mem.free()
	s.unreserve(kindSRQ, 0)
	return nil
}

func (o *srqObj) clientError(err error) {
	o.s.complain("SRQ %d: %v", o.h, err)
	o.s.SendEvent(proto.OpEvent, &proto.Event{Type: verbs.EventSRQErr, Object: proto.ObjectSRQ, Handle: o.h, Port: 1})
}

func handleCreateSRQ(s *Session, req *Request, rep *Reply) error {
	var m proto.CreateSRQReq
	if err := req.Decode(&m); err != nil {
		return err
	}
	pd, err := lookup[*pdObj](s, m.PD, kindPD)
	if err != nil {
		return err
	}
	layout := proto.RingLayout{RQSlots: proto.RingSlots(m.MaxWR), RQCap: m.MaxWR, RQSlotSize: proto.RecvSlotSize(m.MaxSGE)}
	if m.MaxWR == 0 || m.MaxWR > proto.MaxRingSlots || layout.RQSlotSize == 0 {
		return fmt.Errorf("rnicd: create SRQ of %d WRs of %d SGEs: %w", m.MaxWR, m.MaxSGE, verbs.ErrInvalid)
	}
	if err := layout.Validate(); err != nil {
		return err
	}
	if err := s.reserve(kindSRQ, 0); err != nil {
		return err
	}
	o := &srqObj{s: s}
	fail := func(err error) error {
		if o.srq != nil {
			o.srq.Destroy()
		}
		if o.mem != nil {
			o.mem.free()
		}
		s.unreserve(kindSRQ, 0)
		return err
	}
	if err := s.checkRing(layout.Size()); err != nil {
		return fail(err)
	}
	if o.srq, err = s.dev.dev.CreateSRQ(pd.pd, int(m.MaxWR), int(m.MaxSGE)); err != nil {
		return fail(err)
	}
	if o.mem, err = s.newRingMem(layout.Size()); err != nil {
		return fail(err)
	}
	rings, err := proto.NewWorkRings(o.mem.mem, layout)
	if err != nil {
		return fail(err)
	}
	bell, err := s.newWaker(rings)
	if err != nil {
		return fail(err)
	}
	o.d = newDrainer(s, rings, bell)
	o.d.postRecv = o.srq.PostRecv
	o.d.clientError = o.clientError
	o.h = s.newHandle()
	s.dev.own(o.srq, o)
	s.insert(o)
	o.d.start()
	rep.Set(&proto.CreateSRQReply{SRQ: o.h, Ring: layout, Place: o.mem.place()},
		append(o.mem.fds(), bell.fds()...)...)
	rep.After(o.mem.sent)
	return nil
}
