// Memory windows (proto/mw.go): ALLOC_MW and DEALLOC_MW. Binds are
// BIND_MW WQEs in the send ring, posted to the QP like any WR; the NIC
// names the window and the MR by their keys, which are the daemon's own.

package server

import (
	"fmt"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/verbs"
)

func init() {
	Register(proto.OpAllocMW, handleAllocMW)
	Register(proto.OpDeallocMW, handleDestroy[*mwObj](kindMW))
}

type mwObj struct {
	h  uint32
	mw ibv.MW
}

func (m *mwObj) kind() objKind  { return kindMW }
func (m *mwObj) handle() uint32 { return m.h }

func (m *mwObj) destroy(s *Session, _ bool) error {
	if err := m.mw.Dealloc(); err != nil {
		return err
	}
	s.unreserve(kindMW, 0)
	return nil
}

func handleAllocMW(s *Session, req *Request, rep *Reply) error {
	var m proto.AllocMWReq
	if err := req.Decode(&m); err != nil {
		return err
	}
	pd, err := lookup[*pdObj](s, m.PD, kindPD)
	if err != nil {
		return err
	}
	alloc, err := deviceAs[ibv.MWAllocator](s, "rnicd: memory windows on %s")
	if err != nil {
		return err
	}
	if m.Type > 0xff {
		return fmt.Errorf("rnicd: memory window type %d: %w", m.Type, verbs.ErrInvalid)
	}
	if err := s.reserve(kindMW, 0); err != nil {
		return err
	}
	mw, err := alloc.AllocMW(pd.pd, memory.WindowType(m.Type))
	if err != nil {
		s.unreserve(kindMW, 0)
		return err
	}
	o := &mwObj{h: s.newHandle(), mw: mw}
	s.insert(o)
	rep.Set(&proto.AllocMWReply{MW: o.h, RKey: mw.RKey()})
	return nil
}
