// Memory regions over a client's memory: the client sends the memfd of the
// buffer (sealed against shrinking: memory.MapShared insists, so no client
// can truncate the file under the NIC and make the daemon fault), the
// daemon maps the whole file and registers the client's bytes at the
// client's own addresses (RegMRIOVA), so SGEs and rkeys carry the
// client's pointers unchanged. The region pins the mapping; deregistering
// unmaps it once no DMA copies through it.

package server

import (
	"fmt"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/verbs"
)

func init() {
	Register(proto.OpRegMR, handleRegMR)
	Register(proto.OpDeregMR, handleDestroy[*mrObj](kindMR))
}

type mrObj struct {
	h      uint32
	mr     ibv.MR
	mapped uint64 // bytes of the client's file the daemon maps
}

func (m *mrObj) kind() objKind  { return kindMR }
func (m *mrObj) handle() uint32 { return m.h }

func (m *mrObj) destroy(s *Session, reaping bool) error {
	// Dereg returns once no DMA uses the region; the mapping goes with
	// the region's reference.
	if err := m.mr.Dereg(); err != nil {
		return err
	}
	s.unreserve(kindMR, m.mapped)
	s.srv.stats.bytesUnmapped.Add(m.mapped)
	if reaping {
		s.srv.stats.reapedBytes.Add(m.mapped)
	}
	return nil
}

func handleRegMR(s *Session, req *Request, rep *Reply) error {
	var m proto.RegMRReq
	if err := req.Decode(&m); err != nil {
		return err
	}
	if len(req.FDs) != 1 {
		return fmt.Errorf("%w: REG_MR needs the memory's memfd, got %d descriptors", proto.ErrMalformed, len(req.FDs))
	}
	pd, err := lookup[*pdObj](s, m.PD, kindPD)
	if err != nil {
		return err
	}
	const maxInt = int(^uint(0) >> 1)
	if m.FileSize == 0 || m.FileSize > uint64(maxInt) || m.Length == 0 ||
		m.Offset > m.FileSize || m.Length > m.FileSize-m.Offset {
		return fmt.Errorf("rnicd: reg MR: %d bytes at %d of a %d-byte memfd: %w", m.Length, m.Offset, m.FileSize, verbs.ErrInvalid)
	}
	if err := s.reserve(kindMR, m.FileSize); err != nil {
		return err
	}
	sh, err := memory.MapShared(req.FDs[0], int(m.FileSize))
	if err != nil {
		s.unreserve(kindMR, m.FileSize)
		return fmt.Errorf("rnicd: reg MR: %w", err)
	}
	// The mapping is all the region needs: a descriptor per MR would let
	// one client spend the daemon's descriptor limit for everyone.
	sh.CloseFd()
	mem := sh.Bytes()[m.Offset : m.Offset+m.Length]
	mr, err := s.dev.dev.RegMRIOVA(pd.pd, mem, m.IOVA, memory.Access(m.Access))
	// The region holds its own reference to the mapping; ours goes now,
	// which unmaps at once if the registration failed.
	sh.Close()
	if err != nil {
		s.unreserve(kindMR, m.FileSize)
		return err
	}
	o := &mrObj{h: s.newHandle(), mr: mr, mapped: m.FileSize}
	s.insert(o)
	rep.Set(&proto.RegMRReply{MR: o.h, LKey: mr.LKey(), RKey: mr.RKey(), Addr: mr.Addr(), Len: mr.Len()})
	return nil
}
