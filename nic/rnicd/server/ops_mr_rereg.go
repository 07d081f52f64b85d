// REREG_MR_WINDOW (proto/mr_rereg.go): ibv_rereg_mr under the same keys.
// New memory is a window of the client's arena, mapped and accounted as
// REG_MR_WINDOW maps it; the window the MR held is given back once the
// re-registration took (the region unmaps it when no DMA uses it).

package server

import (
	"fmt"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/verbs"
)

func init() { Register(proto.OpReregMRWindow, handleReregMRWindow) }

func handleReregMRWindow(s *Session, req *Request, rep *Reply) error {
	var m proto.ReregMRWindowReq
	if err := req.Decode(&m); err != nil {
		return err
	}
	translate := m.Flags&proto.ReregTranslation != 0
	if m.Flags&^proto.ReregTranslation != 0 {
		return fmt.Errorf("rnicd: rereg MR: flags %#x: %w", m.Flags, verbs.ErrInvalid)
	}
	want := 0
	if translate {
		want = 1 // the arena's memfd
	}
	if len(req.FDs) != want {
		return fmt.Errorf("%w: REREG_MR_WINDOW with flags %#x takes %d descriptors, got %d", proto.ErrMalformed, m.Flags, want, len(req.FDs))
	}
	o, err := lookup[*mrObj](s, m.MR, kindMR)
	if err != nil {
		return err
	}
	rr, ok := o.mr.(ibv.ReregMR)
	if !ok {
		return fmt.Errorf("rnicd: rereg MR: %w", verbs.ErrNotSupported)
	}
	pd, err := lookup[*pdObj](s, m.PD, kindPD)
	if err != nil {
		return err
	}
	if !translate {
		if err := rr.Rereg(pd.pd, nil, 0, memory.Access(m.Access)); err != nil {
			return err
		}
	} else if err := reregWindow(s, o, rr, pd, &m, req.FDs[0]); err != nil {
		return err
	}
	rep.Set(&proto.RegMRReply{MR: o.h, LKey: o.mr.LKey(), RKey: o.mr.RKey(), Addr: o.mr.Addr(), Len: o.mr.Len()})
	return nil
}

// reregWindow re-registers o over a new window of the arena fd.
func reregWindow(s *Session, o *mrObj, rr ibv.ReregMR, pd *pdObj, m *proto.ReregMRWindowReq, fd int) error {
	start, size, skip, err := window(m.Offset, m.Length)
	if err != nil {
		return err
	}
	if err := s.reserveMRBytes(size); err != nil {
		return err
	}
	sh, err := memory.MapSharedWindow(fd, int64(start), int(size))
	if err != nil {
		s.unreserveMRBytes(size)
		return fmt.Errorf("rnicd: rereg MR window: %w", err)
	}
	err = rr.Rereg(pd.pd, sh.Bytes()[skip:skip+m.Length], m.IOVA, memory.Access(m.Access))
	sh.Close() // the region holds its own reference
	if err != nil {
		s.unreserveMRBytes(size)
		return err
	}
	s.unreserveMRBytes(o.mapped)
	s.srv.stats.bytesUnmapped.Add(o.mapped)
	o.mapped = size
	return nil
}

// reserveMRBytes counts bytes of MR mapping against the client's limit
// and the budgets of its uid, tenant and daemon, as reserve does for a
// new MR, but no MR: a re-registration adds none. (Deregistration gives
// back the last window's bytes, so each window must be charged.)
func (s *Session) reserveMRBytes(bytes uint64) error {
	lim := &s.srv.limits
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mrBytes+bytes > lim.MaxMRBytes || s.mrBytes+bytes < bytes {
		return limitError(lim.MaxMRBytes, "bytes of registered memory", "--max-mr-bytes")
	}
	if err := s.take(mapped{bytes: bytes}); err != nil {
		return err
	}
	s.mrBytes += bytes
	return nil
}

// unreserveMRBytes undoes reserveMRBytes.
func (s *Session) unreserveMRBytes(bytes uint64) {
	s.mu.Lock()
	s.mrBytes -= bytes
	s.give(mapped{bytes: bytes})
	s.mu.Unlock()
}
