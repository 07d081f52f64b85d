// The DUT side of a case before its steps: objects through the agent and
// an RC (or UC/UD) QP brought up facing the tester's QP.

package conform

import (
	"bytes"
	"fmt"

	"github.com/rnic/rnic/cmd/internal/conform/agentproto"
	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
)

// setupCQE is the size of the case's CQ.
const setupCQE = 256

func (r *Run) setup() error {
	s := &r.Case.Setup
	a := r.Agent
	if err := a.Reset(); err != nil {
		return err
	}
	var err error
	if r.PD, err = a.CreatePD(); err != nil {
		return err
	}
	if r.CQ, err = a.CreateCQ(setupCQE); err != nil {
		return err
	}
	if err := r.registerMRs(s.MRs); err != nil {
		return err
	}
	typ := s.QPType
	if typ == 0 {
		typ = verbs.QPTypeRC
	}
	r.QP, err = a.CreateQP(agentproto.CreateQP{PD: r.PD, Type: uint8(typ), SendCQ: r.CQ, RecvCQ: r.CQ,
		Cap: agentproto.QPCap{MaxSendWR: 64, MaxRecvWR: 64, MaxSendSGE: 2, MaxRecvSGE: 2}})
	if err != nil {
		return err
	}
	r.Attrs = r.defaultAttrs()
	if s.Attr != nil {
		s.Attr(&r.Attrs)
	}
	if s.Custom != nil {
		return s.Custom(r)
	}
	if err := r.bringUp(typ, s.State); err != nil {
		return err
	}
	return r.postSetupRecvs(s)
}

func (r *Run) registerMRs(mrs []MR) error {
	if len(mrs) == 0 {
		mrs = []MR{{Name: DefaultMR, Len: 4096,
			Access: memory.LocalWrite | memory.RemoteWrite | memory.RemoteRead | memory.RemoteAtomic}}
	}
	for _, m := range mrs {
		info, err := r.Agent.RegMR(agentproto.RegMR{PD: r.PD, Len: m.Len, Access: uint32(m.Access)})
		if err != nil {
			return fmt.Errorf("MR %s: %w", m.Name, err)
		}
		r.MRs[m.Name] = info
		if len(m.Fill) > 0 {
			b := bytes.Repeat(m.Fill, m.Len/len(m.Fill)+1)[:m.Len]
			if err := r.Agent.WriteMR(info.H, 0, b); err != nil {
				return fmt.Errorf("MR %s: %w", m.Name, err)
			}
		}
	}
	return nil
}

// bringUp moves the QP through INIT and RTR to want (RTS if zero).
func (r *Run) bringUp(typ verbs.QPType, want verbs.QPState) error {
	if r.Case.Setup.Reset {
		return nil
	}
	if want == verbs.QPSReset {
		want = verbs.QPSRTS
	}
	at := &r.Attrs
	init := agentproto.QPAttr{State: agentproto.U8(uint8(verbs.QPSInit)), PKeyIndex: agentproto.U16(at.PKeyIndex),
		Port: agentproto.U8(1)}
	if typ == verbs.QPTypeUD {
		init.QKey = agentproto.U32(at.QKey)
	} else {
		init.Access = agentproto.U32(uint32(at.Access))
	}
	if err := r.Agent.ModifyQP(r.QP.H, init); err != nil {
		return fmt.Errorf("to INIT: %w", err)
	}
	if want == verbs.QPSInit {
		return nil
	}
	rtr := agentproto.QPAttr{State: agentproto.U8(uint8(verbs.QPSRTR))}
	if typ != verbs.QPTypeUD {
		sgid, err := r.sgidIndex()
		if err != nil {
			return err
		}
		rtr.PathMTU = agentproto.Int(at.PathMTU.Bytes())
		rtr.DestQPN = agentproto.U32(r.TesterQPN)
		rtr.RQPSN = agentproto.U32(at.RQPSN)
		rtr.AV = &agentproto.AV{DGID: r.Cfg.TesterAddr.String(), SGIDIndex: sgid, HopLimit: 64}
		if typ == verbs.QPTypeRC {
			rtr.MaxDestRdAtomic = agentproto.U8(at.MaxDestRdAtomic)
			rtr.MinRNRTimer = agentproto.U8(at.MinRNRTimer)
		}
	}
	if err := r.Agent.ModifyQP(r.QP.H, rtr); err != nil {
		return fmt.Errorf("to RTR: %w", err)
	}
	if want == verbs.QPSRTR {
		return nil
	}
	rts := agentproto.QPAttr{State: agentproto.U8(uint8(verbs.QPSRTS)), SQPSN: agentproto.U32(at.SQPSN)}
	if typ == verbs.QPTypeRC {
		rts.Timeout, rts.RetryCnt, rts.RNRRetry = agentproto.U8(at.Timeout), agentproto.U8(at.RetryCnt), agentproto.U8(at.RNRRetry)
		rts.MaxRdAtomic = agentproto.U8(at.MaxRdAtomic)
	}
	if err := r.Agent.ModifyQP(r.QP.H, rts); err != nil {
		return fmt.Errorf("to RTS: %w", err)
	}
	return nil
}

// sgidIndex is the index of the DUT's address in its GID table.
func (r *Run) sgidIndex() (uint8, error) {
	for i, s := range r.Info.GIDs {
		if g, err := parseAddr(s); err == nil && g.Unmap() == r.DUTAddr.Unmap() {
			return uint8(i), nil
		}
	}
	return 0, fmt.Errorf("the DUT's address %v is not in its GID table %v", r.DUTAddr, r.Info.GIDs)
}

func (r *Run) postSetupRecvs(s *Setup) error {
	if s.Recvs == 0 {
		return nil
	}
	n := s.RecvLen
	if n == 0 {
		n = 1024
	}
	name := s.RecvMR
	if name == "" {
		name = DefaultMR
	}
	mr := r.MR(name)
	wrs := make([]agentproto.RecvWR, s.Recvs)
	for i := range wrs {
		wrs[i] = agentproto.RecvWR{ID: uint64(i + 1), SGL: []agentproto.SGE{{Addr: mr.Addr, Len: uint32(n), LKey: mr.LKey}}}
	}
	return r.Agent.PostRecv(r.QP.H, wrs...)
}
