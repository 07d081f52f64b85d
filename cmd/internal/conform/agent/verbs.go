package agent

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/rnic/rnic/cmd/internal/conform/agentproto"
	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
)

func (s *session) opCreatePD(agentproto.Request) (any, error) {
	pd, err := s.dev.AllocPD()
	if err != nil {
		return nil, err
	}
	return agentproto.Handle{H: s.add(&pdObj{pd})}, nil
}

// maxMR bounds one registration the tester may ask for.
const maxMR = 64 << 20

func (s *session) opRegMR(req agentproto.Request) (any, error) {
	var a agentproto.RegMR
	if err := args(req, &a); err != nil {
		return nil, err
	}
	pd, err := get[*pdObj](s, a.PD, "PD")
	if err != nil {
		return nil, err
	}
	if a.Len <= 0 || a.Len > maxMR {
		return nil, fail(agentproto.CodeBadRequest, fmt.Errorf("MR length %d outside 1..%d", a.Len, maxMR))
	}
	buf, err := s.dev.AllocBuffer(a.Len)
	if err != nil {
		return nil, err
	}
	mr, err := s.dev.RegMR(pd.pd, buf.Bytes(), memory.Access(a.Access))
	if err != nil {
		buf.Close()
		return nil, err
	}
	h := s.add(&mrObj{mr: mr, buf: buf})
	return agentproto.MRInfo{H: h, LKey: mr.LKey(), RKey: mr.RKey(), Addr: mr.Addr(), Len: mr.Len()}, nil
}

func (s *session) opAllocMW(req agentproto.Request) (any, error) {
	var a agentproto.AllocMW
	if err := args(req, &a); err != nil {
		return nil, err
	}
	pd, err := get[*pdObj](s, a.PD, "PD")
	if err != nil {
		return nil, err
	}
	alloc, ok := s.dev.(ibv.MWAllocator)
	if !ok {
		return nil, fail(agentproto.CodeUnsupported, fmt.Errorf("%s: no memory windows", s.dev.Name()))
	}
	mw, err := alloc.AllocMW(pd.pd, memory.WindowType(a.Type))
	if err != nil {
		return nil, err
	}
	return agentproto.MWInfo{H: s.add(mw), RKey: mw.RKey()}, nil
}

func (s *session) opDeallocMW(req agentproto.Request) (any, error) {
	var a agentproto.Handle
	if err := args(req, &a); err != nil {
		return nil, err
	}
	mw, err := get[ibv.MW](s, a.H, "MW")
	if err != nil {
		return nil, err
	}
	if err := mw.Dealloc(); err != nil {
		return nil, err
	}
	delete(s.objs, a.H)
	return nil, nil
}

func (s *session) opDeregMR(req agentproto.Request) (any, error) {
	var a agentproto.Handle
	if err := args(req, &a); err != nil {
		return nil, err
	}
	m, err := get[*mrObj](s, a.H, "MR")
	if err != nil {
		return nil, err
	}
	if err := m.mr.Dereg(); err != nil {
		return nil, err
	}
	m.buf.Close()
	delete(s.objs, a.H)
	return nil, nil
}

func (s *session) opCreateCQ(req agentproto.Request) (any, error) {
	var a agentproto.CreateCQ
	if err := args(req, &a); err != nil {
		return nil, err
	}
	cq, err := s.dev.CreateCQ(a.CQE)
	if err != nil {
		return nil, err
	}
	return agentproto.Handle{H: s.add(cq)}, nil
}

func capOf(c verbs.QPCap) agentproto.QPCap {
	return agentproto.QPCap{MaxSendWR: c.MaxSendWR, MaxRecvWR: c.MaxRecvWR, MaxSendSGE: c.MaxSendSGE,
		MaxRecvSGE: c.MaxRecvSGE, MaxInlineData: c.MaxInlineData}
}

func (s *session) opCreateQP(req agentproto.Request) (any, error) {
	var a agentproto.CreateQP
	if err := args(req, &a); err != nil {
		return nil, err
	}
	pd, err := get[*pdObj](s, a.PD, "PD")
	if err != nil {
		return nil, err
	}
	scq, err := get[ibv.CQ](s, a.SendCQ, "CQ")
	if err != nil {
		return nil, err
	}
	rcq, err := get[ibv.CQ](s, a.RecvCQ, "CQ")
	if err != nil {
		return nil, err
	}
	c := a.Cap
	qp, err := s.dev.CreateQP(pd.pd, ibv.QPInit{Type: verbs.QPType(a.Type), SendCQ: scq, RecvCQ: rcq, SigAll: a.SigAll,
		Cap: verbs.QPCap{MaxSendWR: c.MaxSendWR, MaxRecvWR: c.MaxRecvWR, MaxSendSGE: c.MaxSendSGE,
			MaxRecvSGE: c.MaxRecvSGE, MaxInlineData: c.MaxInlineData}})
	if err != nil {
		return nil, err
	}
	return agentproto.QPInfo{H: s.add(&qpObj{qp: qp, pd: pd.pd}), QPN: qp.QPN(), Cap: capOf(qp.Cap())}, nil
}

func (s *session) qp(h uint32) (ibv.QP, error) {
	o, err := get[*qpObj](s, h, "QP")
	if err != nil {
		return nil, err
	}
	return o.qp, nil
}

func (s *session) opModifyQP(req agentproto.Request) (any, error) {
	var a agentproto.ModifyQP
	if err := args(req, &a); err != nil {
		return nil, err
	}
	qp, err := s.qp(a.QP)
	if err != nil {
		return nil, err
	}
	attr, mask, err := fromWire(&a.Attr)
	if err != nil {
		return nil, fail(agentproto.CodeBadRequest, err)
	}
	return nil, qp.Modify(&attr, mask)
}

func (s *session) opQueryQP(req agentproto.Request) (any, error) {
	var a agentproto.Handle
	if err := args(req, &a); err != nil {
		return nil, err
	}
	qp, err := s.qp(a.H)
	if err != nil {
		return nil, err
	}
	attr, err := qp.Query()
	if err != nil {
		return nil, err
	}
	// The QP's own state, which the NIC may have changed since (SQE, ERR).
	attr.State = qp.State()
	return toWire(&attr), nil
}

func (s *session) opDestroyQP(req agentproto.Request) (any, error) {
	var a agentproto.Handle
	if err := args(req, &a); err != nil {
		return nil, err
	}
	o, err := get[*qpObj](s, a.H, "QP")
	if err != nil {
		return nil, err
	}
	if err := o.destroy(); err != nil {
		return nil, err
	}
	delete(s.objs, a.H)
	return nil, nil
}

func sgl(in []agentproto.SGE) []verbs.SGE {
	out := make([]verbs.SGE, len(in))
	for i, e := range in {
		out[i] = verbs.SGE{Addr: e.Addr, Length: e.Len, LKey: e.LKey}
	}
	return out
}

func (s *session) opPostSend(req agentproto.Request) (any, error) {
	var a agentproto.PostSend
	if err := args(req, &a); err != nil {
		return nil, err
	}
	o, err := get[*qpObj](s, a.QP, "QP")
	if err != nil {
		return nil, err
	}
	wrs := make([]*verbs.SendWR, len(a.WRs))
	for i, w := range a.WRs {
		wr := &verbs.SendWR{ID: w.ID, Opcode: verbs.WROpcode(w.Opcode), Flags: verbs.SendFlags(w.Flags), SGL: sgl(w.SGL),
			Imm: w.Imm, InvRKey: w.InvRKey, RemoteAddr: w.RemoteAddr, RKey: w.RKey, CompareAdd: w.CompareAdd,
			Swap: w.Swap, RemoteQPN: w.RemoteQPN, RemoteQKey: w.RemoteQKey}
		if b := w.Bind; b != nil {
			wr.Bind = verbs.MWBind{Window: b.Window, MR: b.MR, Addr: b.Addr, Length: b.Length, Access: memory.Access(b.Access), RKey: b.RKey}
		}
		if w.AH != nil {
			av, err := avFromWire(w.AH)
			if err != nil {
				return nil, fail(agentproto.CodeBadRequest, err)
			}
			// A UD send names its destination by an address handle
			// of the device (ibv_create_ah), not a bare vector.
			ah, err := s.dev.CreateAH(o.pd, av)
			if err != nil {
				return nil, err
			}
			o.ahs = append(o.ahs, ah)
			wr.AH = ah.AV()
		}
		wrs[i] = wr
	}
	return nil, o.qp.PostSend(wrs...)
}

func (s *session) opPostRecv(req agentproto.Request) (any, error) {
	var a agentproto.PostRecv
	if err := args(req, &a); err != nil {
		return nil, err
	}
	qp, err := s.qp(a.QP)
	if err != nil {
		return nil, err
	}
	wrs := make([]*verbs.RecvWR, len(a.WRs))
	for i, w := range a.WRs {
		wrs[i] = &verbs.RecvWR{ID: w.ID, SGL: sgl(w.SGL)}
	}
	return nil, qp.PostRecv(wrs...)
}

// maxPoll and maxPollWait bound one poll_cq's count and a request's wait.
const maxPoll = 1024

var maxPollWait = 30 * time.Second

func (s *session) opPollCQ(req agentproto.Request) (any, error) {
	var a agentproto.PollCQ
	if err := args(req, &a); err != nil {
		return nil, err
	}
	cq, err := get[ibv.CQ](s, a.CQ, "CQ")
	if err != nil {
		return nil, err
	}
	n := min(max(a.Max, 1), maxPoll)
	deadline := time.Now().Add(min(time.Duration(a.WaitMS)*time.Millisecond, maxPollWait))
	wcs := make([]verbs.WC, n)
	got := 0
	for {
		got += cq.Poll(wcs[got:])
		if got == n || !time.Now().Before(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	out := agentproto.PollResult{WCs: make([]agentproto.WC, got)}
	for i, wc := range wcs[:got] {
		out.WCs[i] = agentproto.WC{ID: wc.WRID, Status: uint8(wc.Status), StatusName: wc.Status.String(),
			Opcode: uint8(wc.Opcode), OpcodeName: wc.Opcode.String(), VendorErr: wc.VendorErr, ByteLen: wc.ByteLen,
			Imm: wc.Imm, InvRKey: wc.InvRKey, QPN: wc.QPN, SrcQP: wc.SrcQP, Flags: uint8(wc.Flags)}
	}
	return out, nil
}

// span checks [off, off+n) against an MR's buffer.
func span(m *mrObj, off uint64, n int) ([]byte, error) {
	b := m.buf.Bytes()
	if n < 0 || off > uint64(len(b)) || uint64(n) > uint64(len(b))-off {
		return nil, fail(agentproto.CodeBadRequest, fmt.Errorf("range [%d, +%d) outside the MR's %d bytes", off, n, len(b)))
	}
	return b[off : off+uint64(n)], nil
}

func (s *session) opReadMR(req agentproto.Request) (any, error) {
	var a agentproto.ReadMR
	if err := args(req, &a); err != nil {
		return nil, err
	}
	m, err := get[*mrObj](s, a.MR, "MR")
	if err != nil {
		return nil, err
	}
	b, err := span(m, a.Off, a.Len)
	if err != nil {
		return nil, err
	}
	return agentproto.Data{Data: append([]byte{}, b...)}, nil
}

func (s *session) opWriteMR(req agentproto.Request) (any, error) {
	var a agentproto.WriteMR
	if err := args(req, &a); err != nil {
		return nil, err
	}
	m, err := get[*mrObj](s, a.MR, "MR")
	if err != nil {
		return nil, err
	}
	b, err := span(m, a.Off, len(a.Data))
	if err != nil {
		return nil, err
	}
	copy(b, a.Data)
	return nil, nil
}

func (s *session) opEvents(req agentproto.Request) (any, error) {
	var a agentproto.Wait
	if err := args(req, &a); err != nil {
		return nil, err
	}
	evs, at := s.srv.events.since(s.evAt, min(time.Duration(a.WaitMS)*time.Millisecond, maxPollWait))
	s.evAt = at
	out := agentproto.EventsResult{Events: []agentproto.Event{}}
	for _, e := range evs {
		we := agentproto.Event{Type: uint8(e.Type), Name: e.Type.String()}
		if e.QP != nil {
			h := s.handleOf(e.QP)
			if h == 0 {
				continue // another session's QP
			}
			we.QP, we.QPN = h, e.QP.QPN()
		}
		out.Events = append(out.Events, we)
	}
	return out, nil
}

func (s *session) handleOf(qp ibv.QP) uint32 {
	for h, o := range s.objs {
		if q, ok := o.(*qpObj); ok && q.qp == qp {
			return h
		}
	}
	return 0
}

func (s *session) opCounters(agentproto.Request) (any, error) {
	out := agentproto.CountersResult{Counters: []agentproto.Counter{}}
	if c, ok := s.dev.(ibv.Counters); ok {
		for _, v := range c.Counters() {
			out.Counters = append(out.Counters, agentproto.Counter{Name: v.Name, Value: v.Value})
		}
	}
	return out, nil
}

func avFromWire(a *agentproto.AV) (verbs.AddressVector, error) {
	g, err := netip.ParseAddr(a.DGID)
	if err != nil {
		return verbs.AddressVector{}, fmt.Errorf("dgid: %w", err)
	}
	av := verbs.AddressVector{DGID: netip.AddrFrom16(g.As16()), SGIDIndex: a.SGIDIndex, FlowLabel: a.FlowLabel,
		HopLimit: a.HopLimit, TrafficClass: a.TrafficClass, SL: a.SL, PortNum: 1, SrcPort: a.SrcPort}
	if a.DMAC != "" {
		if av.DMAC, err = parseMAC(a.DMAC); err != nil {
			return av, err
		}
	}
	return av, nil
}

var errBadMAC = errors.New("bad MAC address")
