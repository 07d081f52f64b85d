// REG_MR_WINDOW (proto/mr_window.go): an MR over the pages of a client's
// memory arena that it covers. The daemon maps that window only (an arena
// is as large as the client's address space and mostly holes), with the
// same checks and accounting as REG_MR: the memfd must be sealed against
// shrinking, the window counts against the client's MR bytes, and the
// region pins the mapping until no DMA uses it.

package server

import (
	"fmt"
	"os"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/verbs"
)

func init() { Register(proto.OpRegMRWindow, handleRegMRWindow) }

// window returns the page-aligned file window holding length bytes at off,
// and where in it they start.
func window(off, length uint64) (start, size, skip uint64, err error) {
	pg := uint64(os.Getpagesize())
	const maxInt = uint64(^uint(0) >> 1)
	if length == 0 || off > maxInt || length > maxInt-off {
		return 0, 0, 0, fmt.Errorf("rnicd: reg MR window: %d bytes at %d: %w", length, off, verbs.ErrInvalid)
	}
	start = off &^ (pg - 1)
	end := (off + length + pg - 1) &^ (pg - 1)
	if end < off+length || end-start > maxInt {
		return 0, 0, 0, fmt.Errorf("rnicd: reg MR window: %d bytes at %d: %w", length, off, verbs.ErrInvalid)
	}
	return start, end - start, off - start, nil
}

func handleRegMRWindow(s *Session, req *Request, rep *Reply) error {
	var m proto.RegMRWindowReq
	if err := req.Decode(&m); err != nil {
		return err
	}
	if len(req.FDs) != 1 {
		return fmt.Errorf("%w: REG_MR_WINDOW needs the arena's memfd, got %d descriptors", proto.ErrMalformed, len(req.FDs))
	}
	pd, err := lookup[*pdObj](s, m.PD, kindPD)
	if err != nil {
		return err
	}
	start, size, skip, err := window(m.Offset, m.Length)
	if err != nil {
		return err
	}
	if err := s.reserve(kindMR, size); err != nil {
		return err
	}
	sh, err := memory.MapSharedWindow(req.FDs[0], int64(start), int(size))
	if err != nil {
		s.unreserve(kindMR, size)
		return fmt.Errorf("rnicd: reg MR window: %w", err)
	}
	sh.CloseFd() // the mapping is enough; no descriptor per MR (ops_mr.go)
	mem := sh.Bytes()[skip : skip+m.Length]
	mr, err := s.dev.dev.RegMRIOVA(pd.pd, mem, m.IOVA, memory.Access(m.Access))
	sh.Close() // the region holds its own reference
	if err != nil {
		s.unreserve(kindMR, size)
		return err
	}
	o := &mrObj{h: s.newHandle(), mr: mr, mapped: size}
	s.insert(o)
	rep.Set(&proto.RegMRReply{MR: o.h, LKey: mr.LKey(), RKey: mr.RKey(), Addr: mr.Addr(), Len: mr.Len()})
	return nil
}
