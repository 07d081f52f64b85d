// Protection domains and address handles.

package server

import (
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/proto"
)

func init() {
	Register(proto.OpAllocPD, handleAllocPD)
	Register(proto.OpDeallocPD, handleDestroy[*pdObj](kindPD))
	Register(proto.OpCreateAH, handleCreateAH)
	Register(proto.OpDestroyAH, handleDestroy[*ahObj](kindAH))
}

type pdObj struct {
	h  uint32
	pd ibv.PD
}

func (p *pdObj) kind() objKind  { return kindPD }
func (p *pdObj) handle() uint32 { return p.h }

func (p *pdObj) destroy(s *Session, _ bool) error {
	if err := p.pd.Dealloc(); err != nil {
		return err
	}
	s.unreserve(kindPD, 0)
	return nil
}

func handleAllocPD(s *Session, req *Request, rep *Reply) error {
	if err := req.Decode(&proto.Empty{}); err != nil {
		return err
	}
	if err := s.reserve(kindPD, 0); err != nil {
		return err
	}
	pd, err := s.dev.dev.AllocPD()
	if err != nil {
		s.unreserve(kindPD, 0)
		return err
	}
	p := &pdObj{h: s.newHandle(), pd: pd}
	s.insert(p)
	rep.Set(&proto.Handle{H: p.h})
	return nil
}

// handleDestroy serves the destroy op of objects of type T.
func handleDestroy[T object](k objKind) Handler {
	return func(s *Session, req *Request, rep *Reply) error {
		var m proto.Handle
		if err := req.Decode(&m); err != nil {
			return err
		}
		o, err := lookup[T](s, m.H, k)
		if err != nil {
			return err
		}
		if err := o.destroy(s, false); err != nil {
			return err
		}
		s.remove(o)
		rep.Set(&proto.Empty{})
		return nil
	}
}

type ahObj struct {
	h  uint32
	ah ibv.AH
}

func (a *ahObj) kind() objKind  { return kindAH }
func (a *ahObj) handle() uint32 { return a.h }

func (a *ahObj) destroy(s *Session, _ bool) error {
	s.drainUDSends()
	if err := a.ah.Destroy(); err != nil {
		return err
	}
	s.unreserve(kindAH, 0)
	return nil
}

func handleCreateAH(s *Session, req *Request, rep *Reply) error {
	var m proto.CreateAHReq
	if err := req.Decode(&m); err != nil {
		return err
	}
	pd, err := lookup[*pdObj](s, m.PD, kindPD)
	if err != nil {
		return err
	}
	if err := s.reserve(kindAH, 0); err != nil {
		return err
	}
	ah, err := s.dev.dev.CreateAH(pd.pd, m.AV)
	if err != nil {
		s.unreserve(kindAH, 0)
		return err
	}
	a := &ahObj{h: s.newHandle(), ah: ah}
	s.insert(a)
	rep.Set(&proto.CreateAHReply{AH: a.h, AV: *ah.AV()})
	return nil
}
