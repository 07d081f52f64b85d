// rdma_cm on RoCEv2: the IB CM's MADs between the ports' QP1 (IBTA Vol 1
// chapter 12, Annex A17) with rdma_cm's IP addressing in the REQ's private
// data (Annex A11). The DUT runs rdma_cm through the agent (cm_connect,
// cm_listen/cm_accept, cm_disconnect); the tester speaks the CM on its own
// port with roce/cm's codecs. A cm_connect or cm_accept blocks the agent
// until the connection is up, so those calls run in the background while
// the tester answers on the wire.

package conform

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/rnic/rnic/cmd/internal/conform/agentproto"
	"github.com/rnic/rnic/cmd/internal/conform/rocepeer"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce/cm/mad"
	"github.com/rnic/rnic/roce/wire"
)

func init() { Register(cmCases()...) }

// CM constants of the tester's side.
const (
	cmTesterGUID = 0x02C0FFEE00000001
	cmWait       = 3000 // ms an agent CM call may wait
)

// testerCommID is the tester's communication ID in this run: its own
// per run, so that a late message of an earlier run's connection (a DREQ
// when the agent tore it down) is told apart.
func testerCommID(r *Run) uint32 { return 0xC0DE0000 | r.TesterQPN&0xFFFF }

// cmPort is the rdma_cm port the DUT connects to in this run (its own per
// run, like the comm ID).
func cmPort(r *Run) uint16 { return 7000 + uint16(r.TesterQPN&0x3FF) }

// cmSetup leaves the DUT's QP in RESET: rdma_cm brings it up.
var cmSetup = Setup{Custom: func(r *Run) error { return nil }}

// cmNeeds makes the cases not-applicable on a DUT without rdma_cm.
func cmNeeds(info agentproto.DeviceInfo) string {
	if !info.CM {
		return "the agent cannot run rdma_cm on this device"
	}
	return ""
}

// cmState is the run's CM exchange.
type cmState struct {
	psn    uint32 // the tester's GSI PSN
	req    mad.REQ
	reqTID uint64
	rep    mad.REP
	done   chan cmResult // the background agent call
}

type cmResult struct {
	info agentproto.CMConnInfo
	err  error
}

func cmOf(r *Run) *cmState {
	if s, ok := r.Vars["peer.cm"].(*cmState); ok {
		return s
	}
	s := &cmState{}
	r.Vars["peer.cm"] = s
	return s
}

// cmSend sends a CM message from the tester's QP1.
func cmSend(r *Run, msg rocepeer.CMMessage, tid uint64) error {
	b, err := rocepeer.EncodeMAD(msg, tid)
	if err != nil {
		return err
	}
	s := cmOf(r)
	p := rocepeer.GSIPacket(s.psn, b)
	s.psn++
	e := r.Port.Encap(r.DUTAddr)
	no, err := r.Port.Send(wire.AppendFrame(nil, &e, &p.H, p.Payload))
	if err == nil {
		r.Note("#%d→%v", no, mad.MAD(b).AttrID())
	}
	return err
}

// cmExpect takes the DUT's next frame, which must be a well-formed GSI
// datagram carrying the CM message attr.
func cmExpect(r *Run, attr mad.AttrID, d time.Duration) (mad.MAD, error) {
	f, ok := nextGSI(r, r.Bound(d))
	if !ok {
		return nil, fmt.Errorf("no %v from the DUT within %v", attr, r.Bound(d))
	}
	if f.Err != nil || !f.F.VerifyICRC() {
		return nil, fmt.Errorf("frame %d is not a well-formed RoCEv2 frame (%v)", f.No, f.Err)
	}
	m := rocepeer.CMFrom(&f.F.Packet)
	if m == nil {
		r.Note("#%d←%v", f.No, f.Op())
		return nil, fmt.Errorf("frame %d: %v to QP %#x, want a CM MAD to QP1", f.No, f.Op(), f.H.BTH.DestQP)
	}
	if stale(r, m) {
		r.Note("#%d←%v of an earlier run, passed over", f.No, m.AttrID())
		return cmExpect(r, attr, d)
	}
	r.Note("#%d←%v", f.No, m.AttrID())
	if d := f.H.DETH; d.QKey != rocepeer.GSIQKey || d.SrcQP != rocepeer.GSIQPN {
		return nil, fmt.Errorf("frame %d: DETH Q_Key %#x SrcQP %d, want %#x and 1 (C13-13)", f.No, d.QKey, d.SrcQP, uint32(rocepeer.GSIQKey))
	}
	if m.AttrID() != attr {
		return nil, fmt.Errorf("frame %d: CM %v, want %v", f.No, m.AttrID(), attr)
	}
	return append(mad.MAD(nil), m...), nil
}

// nextGSI is Run.next for the CM: the DUT's next frame to the tester's
// QP1 or QP (frames of earlier runs' QPs are passed over).
func nextGSI(r *Run, d time.Duration) (Frame, bool) {
	if len(r.pending) > 0 {
		f := r.pending[0]
		r.pending = r.pending[1:]
		return f, true
	}
	deadline := time.Now().Add(d)
	for {
		f, ok := r.Port.Recv(time.Until(deadline))
		if !ok || f.Err != nil || f.H.BTH.DestQP == rocepeer.GSIQPN || f.H.BTH.DestQP == r.TesterQPN {
			return f, ok
		}
	}
}

// stale reports a CM message that belongs to an earlier run: a REQ to
// another run's port, or a message naming another run's comm ID of the
// tester's (the agent's reset tears connections down, and their DREQs
// may arrive during the next case).
func stale(r *Run, m mad.MAD) bool {
	d := m.Data()
	if m.AttrID() == mad.AttrREQ {
		_, port, ok := mad.ServicePort(binary.BigEndian.Uint64(d[8:]))
		return ok && port != cmPort(r)
	}
	remote := binary.BigEndian.Uint32(d[4:])
	return remote>>16 == 0xC0DE && remote != testerCommID(r)
}

// background runs an agent call while the tester answers on the wire.
func background(r *Run, call func() (agentproto.CMConnInfo, error)) {
	ch := make(chan cmResult, 1)
	cmOf(r).done = ch
	go func() {
		info, err := call()
		ch <- cmResult{info, err}
	}()
}

// awaitCall waits for the background agent call.
func awaitCall(r *Run) (agentproto.CMConnInfo, error) {
	s := cmOf(r)
	select {
	case res := <-s.done:
		s.done = nil
		return res.info, res.err
	case <-time.After(r.Bound(cmWait*time.Millisecond) + time.Second):
		return agentproto.CMConnInfo{}, errors.New("the agent's CM call did not return")
	}
}

// cmStep is a CM case's step: when it fails while an agent call is still
// waiting on the DUT, the tester ends the DUT's side of the exchange (a
// REJ for its REQ or REP, a DREP for its DREQ) so that the call returns
// now instead of at its wait bound, and the next case starts at once.
func cmStep(name string, fn func(r *Run) error) Step {
	return Func{Name: name, F: func(r *Run) error {
		err := fn(r)
		if err != nil {
			cmAbort(r)
		}
		return err
	}}
}

func cmAbort(r *Run) {
	s := cmOf(r)
	if s.done == nil {
		return
	}
	select {
	case res := <-s.done:
		s.done <- res // still there for a later look
		return
	default:
	}
	if s.req.LocalCommID != 0 {
		cmSend(r, &mad.REJ{LocalCommID: testerCommID(r), RemoteCommID: s.req.LocalCommID, MessageRejected: mad.MsgREQ,
			Reason: mad.RejConsumerReject}, s.reqTID)
		cmSend(r, &mad.DREP{LocalCommID: testerCommID(r), RemoteCommID: s.req.LocalCommID}, s.reqTID)
	}
	if s.rep.LocalCommID != 0 {
		cmSend(r, &mad.REJ{LocalCommID: testerCommID(r), RemoteCommID: s.rep.LocalCommID, MessageRejected: mad.MsgREP,
			Reason: mad.RejConsumerReject}, s.reqTID)
	}
	select {
	case res := <-s.done:
		s.done <- res
	case <-time.After(time.Second):
	}
}

// dutConnects starts the DUT's cm_connect to the tester.
func dutConnects(priv string) Step {
	return cmStep("DUT connects (rdma_connect)", func(r *Run) error {
		a := agentproto.CMConnect{QP: r.QP.H, Addr: r.Cfg.TesterAddr.String(), Port: cmPort(r),
			PrivateData: []byte(priv), WaitMS: cmWait,
			Param: agentproto.ConnParam{ResponderResources: 3, InitiatorDepth: 2, RetryCount: 5, RNRRetryCount: 6}}
		background(r, func() (agentproto.CMConnInfo, error) { return r.Agent.CMConnect(a) })
		return nil
	})
}

// takeREQ takes the DUT's REQ and keeps it.
func takeREQ(r *Run) error {
	m, err := cmExpect(r, mad.AttrREQ, DefaultWithin)
	if err != nil {
		if s := cmOf(r); s.done != nil {
			select {
			case res := <-s.done:
				return fmt.Errorf("%w (rdma_connect returned: %v)", err, res.err)
			default:
			}
		}
		return err
	}
	s := cmOf(r)
	s.req.Decode(m)
	s.req.PrivateData = append([]byte(nil), s.req.PrivateData...)
	s.reqTID = m.TID()
	return nil
}

func mapped(a netip.Addr) netip.Addr { return netip.AddrFrom16(a.As16()) }

// checkREQ checks what the DUT's REQ must say (§12.6.5, Annex A11).
func checkREQ(r *Run, q *mad.REQ, priv string) error {
	type want struct {
		name      string
		got, want any
	}
	for _, w := range []want{
		{"ServiceID", q.ServiceID, mad.ServiceID(mad.PortSpaceTCP, cmPort(r))},
		{"LocalQPN", q.LocalQPN, r.QP.QPN},
		{"ResponderResources", q.ResponderResources, uint8(3)},
		{"InitiatorDepth", q.InitiatorDepth, uint8(2)},
		{"TransportType (RC)", q.TransportType, uint8(0)},
		{"RetryCount", q.RetryCount, uint8(5)},
		{"RNRRetryCount", q.RNRRetryCount, uint8(6)},
		{"P_Key", q.PKey, uint16(wire.DefaultPKey)},
		{"PrimaryLocalGID", q.PrimaryLocalGID, mapped(r.DUTAddr)},
		{"PrimaryRemoteGID", q.PrimaryRemoteGID, mapped(r.Cfg.TesterAddr)},
	} {
		if w.got != w.want {
			return fmt.Errorf("REQ %s %v, want %v", w.name, w.got, w.want)
		}
	}
	if q.PathMTU < uint8(verbs.MTU256) || q.PathMTU > uint8(verbs.MTU4096) {
		return fmt.Errorf("REQ PathMTU code %d, want 1..5", q.PathMTU)
	}
	var h mad.CMAHeader
	if err := h.Decode(q.PrivateData); err != nil {
		return fmt.Errorf("REQ private data: no rdma_cm header (Annex A11): %w", err)
	}
	if h.Src != r.DUTAddr.Unmap() || h.Dst != r.Cfg.TesterAddr.Unmap() || h.SrcPort == 0 {
		return fmt.Errorf("REQ rdma_cm header src %v port %d dst %v, want src %v, a port, dst %v",
			h.Src, h.SrcPort, h.Dst, r.DUTAddr, r.Cfg.TesterAddr)
	}
	if user := q.PrivateData[mad.CMAHeaderLen:]; !bytes.HasPrefix(user, []byte(priv)) {
		return fmt.Errorf("REQ user private data %q, want %q", short(user), priv)
	}
	return nil
}

// testerREQ is the REQ the tester sends to the DUT's listener on port.
func testerREQ(r *Run, port uint16, priv string) (*mad.REQ, error) {
	pd := make([]byte, mad.CMAHeaderLen, mad.CMAHeaderLen+len(priv))
	h := mad.CMAHeader{IPVersion: 4, SrcPort: 40001, Src: r.Cfg.TesterAddr.Unmap(), Dst: r.DUTAddr.Unmap()}
	if !h.Src.Is4() {
		h.IPVersion = 6
	}
	if err := h.Encode(pd); err != nil {
		return nil, err
	}
	return &mad.REQ{LocalCommID: testerCommID(r), ServiceID: mad.ServiceID(mad.PortSpaceTCP, port), LocalCAGUID: cmTesterGUID,
		LocalQPN: r.TesterQPN, ResponderResources: 4, InitiatorDepth: 4, RemoteCMResponseTimeout: 20,
		StartingPSN: r.PSN(0), LocalCMResponseTimeout: 20, RetryCount: 7, PKey: wire.DefaultPKey,
		PathMTU: uint8(r.Attrs.PathMTU), RNRRetryCount: 7, MaxCMRetries: 15,
		PrimaryLocalLID: mad.PermissiveLID, PrimaryRemoteLID: mad.PermissiveLID,
		PrimaryLocalGID: mapped(r.Cfg.TesterAddr), PrimaryRemoteGID: mapped(r.DUTAddr),
		HopLimit: 64, LocalACKTimeout: 14, PrivateData: append(pd, priv...)}, nil
}

// dutListens has the DUT listen and accept (or reject) in the background,
// then sends the tester's REQ.
func dutListens(reject bool, priv string) Step {
	return cmStep("DUT listens (rdma_listen); the tester's REQ", func(r *Run) error {
		l, err := r.Agent.CMListen(0)
		if err != nil {
			return err
		}
		a := agentproto.CMAccept{Listener: l.H, QP: r.QP.H, Reject: reject, PrivateData: []byte(priv), WaitMS: cmWait,
			Param: agentproto.ConnParam{ResponderResources: 2, InitiatorDepth: 2}}
		background(r, func() (agentproto.CMConnInfo, error) { return r.Agent.CMAccept(a) })
		q, err := testerREQ(r, l.Port, "conform-req")
		if err != nil {
			return err
		}
		s := cmOf(r)
		s.req, s.reqTID = *q, 0x0000_0001_C0DE_0001
		return cmSend(r, q, s.reqTID)
	})
}

// commIDAt changes the byte at off of a CM message's class data (the
// high byte of a comm ID for Breaks).
func commIDAt(off int) func(f *wire.Frame) {
	return rocepeer.EditCM(func(d []byte) { d[off] ^= 0x5A })
}

func cmCases() []Case {
	return []Case{cmREQFields(), cmREPFields(), cmRTU(), cmREJSent(), cmREJReceived(), cmDREQFromTester(),
		cmDREQFromDUT(), cmMRA()}
}

func cmREQFields() Case {
	return Case{
		ID: "12.6.5/req-fields", Section: "IBTA Vol 1 §12.6.5, Annex A11 (RDMA IP CM Service), Annex A17", Transport: RoCE,
		Title: "rdma_connect sends a REQ on QP1: service ID of the port, the QP's QPN, IRD/ORD, retries, RC, GIDs, rdma_cm header",
		Setup: cmSetup, Needs: cmNeeds,
		Steps: []Step{
			dutConnects("conform-req"),
			cmStep("the REQ's fields", func(r *Run) error {
				if err := takeREQ(r); err != nil {
					return err
				}
				return checkREQ(r, &cmOf(r).req, "conform-req")
			}),
			cmStep("reject it; rdma_connect fails", func(r *Run) error {
				s := cmOf(r)
				rej := mad.REJ{LocalCommID: testerCommID(r), RemoteCommID: s.req.LocalCommID, MessageRejected: mad.MsgREQ,
					Reason: mad.RejConsumerReject}
				if err := cmSend(r, &rej, s.reqTID); err != nil {
					return err
				}
				if _, err := awaitCall(r); err == nil {
					return errors.New("rdma_connect succeeded after a REJ")
				}
				return nil
			}),
		},
		Break: outBreak("puts another QPN in the REQ", rocepeer.IsCM(mad.AttrREQ), rocepeer.EditCM(func(d []byte) { d[34] ^= 1 })),
	}
}

// repAndRTU answers the DUT's REQ with a REP and takes the RTU.
func repAndRTU(r *Run) error {
	s := cmOf(r)
	s.rep = mad.REP{LocalCommID: testerCommID(r), RemoteCommID: s.req.LocalCommID, LocalQPN: r.TesterQPN,
		StartingPSN: r.PSN(0), ResponderResources: min(s.req.InitiatorDepth, 4), InitiatorDepth: min(s.req.ResponderResources, 4),
		RNRRetryCount: 7, LocalCAGUID: cmTesterGUID, PrivateData: []byte("conform-rep")}
	if err := cmSend(r, &s.rep, s.reqTID); err != nil {
		return err
	}
	m, err := cmExpect(r, mad.AttrRTU, DefaultWithin)
	if err != nil {
		return err
	}
	var rtu mad.RTU
	rtu.Decode(m)
	if rtu.LocalCommID != s.req.LocalCommID || rtu.RemoteCommID != testerCommID(r) {
		return fmt.Errorf("RTU comm IDs local %#x remote %#x, want %#x and %#x", rtu.LocalCommID, rtu.RemoteCommID,
			s.req.LocalCommID, testerCommID(r))
	}
	if m.TID() != s.reqTID {
		return fmt.Errorf("RTU TID %#x, want the REQ's %#x", m.TID(), s.reqTID)
	}
	return nil
}

// qpIs checks the DUT QP's attributes after the CM brought it up. A CM
// message's Starting PSN is the PSN its sender expects to receive first
// (the peer's send PSN), as Linux's ib_cm reads it: the active side sends
// from the REP's, the passive side from the REQ's.
func qpIs(r *Run, sq, rq uint32) error {
	a, err := r.Agent.QueryQP(r.QP.H)
	if err != nil {
		return err
	}
	if a.State == nil || verbs.QPState(*a.State) != verbs.QPSRTS || a.DestQPN == nil || *a.DestQPN != r.TesterQPN ||
		a.SQPSN == nil || *a.SQPSN != sq || a.RQPSN == nil || *a.RQPSN != rq {
		return fmt.Errorf("DUT QP after the CM: %s, want RTS, dest QPN %#x, sq_psn %#x, rq_psn %#x", qpString(a), r.TesterQPN, sq, rq)
	}
	return nil
}

func qpString(a agentproto.QPAttr) string {
	v := func(p *uint32) string {
		if p == nil {
			return "?"
		}
		return fmt.Sprintf("%#x", *p)
	}
	st := "?"
	if a.State != nil {
		st = verbs.QPState(*a.State).String()
	}
	return fmt.Sprintf("state %s dest QPN %s sq_psn %s rq_psn %s", st, v(a.DestQPN), v(a.SQPSN), v(a.RQPSN))
}

func cmRTU() Case {
	return Case{
		ID: "12.6.9/rtu", Section: "IBTA Vol 1 §12.6.8, §12.6.9, §12.9", Transport: RoCE,
		Title: "REP to the DUT's REQ: an RTU with both comm IDs, the QP in RTS with the REP's QPN and PSN, data flows",
		Setup: cmSetup, Needs: cmNeeds,
		Steps: []Step{
			dutConnects("conform-req"),
			cmStep("REQ, REP, RTU", func(r *Run) error {
				if err := takeREQ(r); err != nil {
					return err
				}
				return repAndRTU(r)
			}),
			cmStep("rdma_connect returns; the QP", func(r *Run) error {
				info, err := awaitCall(r)
				if err != nil {
					return err
				}
				if info.RemoteQPN != r.TesterQPN || !bytes.HasPrefix(info.PrivateData, []byte("conform-rep")) {
					return fmt.Errorf("connection: remote QPN %#x private data %q, want %#x and the REP's", info.RemoteQPN,
						short(info.PrivateData), r.TesterQPN)
				}
				s := cmOf(r)
				return qpIs(r, s.rep.StartingPSN, s.req.StartingPSN)
			}),
			cmStep("a SEND at the REP's starting PSN", func(r *Run) error {
				if err := (Post{wrSend(1, 0, 32)}).Do(r); err != nil {
					return err
				}
				f, err := dutRequest(r, "SEND", DefaultWithin)
				if err != nil {
					return err
				}
				if want := cmOf(r).rep.StartingPSN; f.H.BTH.PSN != want {
					return fmt.Errorf("frame %d: SEND at PSN %#x, want the REP's starting PSN %#x", f.No, f.H.BTH.PSN, want)
				}
				_, err = sendPeer(r, peerResponder(r).ACK(f.H.BTH.PSN))
				return err
			}),
			Poll{Want: []WCWant{wcOK(1)}},
		},
		Break: outBreak("names another comm ID in the RTU", rocepeer.IsCM(mad.AttrRTU), commIDAt(4)),
	}
}

func cmREPFields() Case {
	return Case{
		ID: "12.6.8/rep-fields", Section: "IBTA Vol 1 §12.6.8, §12.9, Annex A11", Transport: RoCE,
		Title: "rdma_accept answers a REQ with a REP: the REQ's comm ID and TID, the QP's QPN, IRD/ORD within the REQ's, private data",
		Setup: cmSetup, Needs: cmNeeds,
		Steps: []Step{
			dutListens(false, "conform-rep"),
			cmStep("the REP's fields", func(r *Run) error {
				m, err := cmExpect(r, mad.AttrREP, DefaultWithin)
				if err != nil {
					return err
				}
				s := cmOf(r)
				s.rep.Decode(m)
				p := &s.rep
				switch {
				case m.TID() != s.reqTID:
					return fmt.Errorf("REP TID %#x, want the REQ's %#x", m.TID(), s.reqTID)
				case p.RemoteCommID != testerCommID(r) || p.LocalCommID == 0:
					return fmt.Errorf("REP comm IDs local %#x remote %#x, want nonzero and %#x", p.LocalCommID, p.RemoteCommID, testerCommID(r))
				case p.LocalQPN != r.QP.QPN:
					return fmt.Errorf("REP LocalQPN %#x, want the QP's %#x", p.LocalQPN, r.QP.QPN)
				case p.ResponderResources > s.req.InitiatorDepth || p.InitiatorDepth > s.req.ResponderResources:
					return fmt.Errorf("REP IRD %d ORD %d exceed the REQ's ORD %d IRD %d", p.ResponderResources, p.InitiatorDepth,
						s.req.InitiatorDepth, s.req.ResponderResources)
				case !bytes.HasPrefix(p.PrivateData, []byte("conform-rep")):
					return fmt.Errorf("REP private data %q, want %q", short(p.PrivateData), "conform-rep")
				}
				return nil
			}),
			cmStep("RTU; rdma_accept returns; the QP", func(r *Run) error {
				s := cmOf(r)
				if err := cmSend(r, &mad.RTU{LocalCommID: testerCommID(r), RemoteCommID: s.rep.LocalCommID}, s.reqTID); err != nil {
					return err
				}
				info, err := awaitCall(r)
				if err != nil {
					return err
				}
				if info.RemoteQPN != r.TesterQPN || !bytes.HasPrefix(info.PrivateData, []byte("conform-req")) {
					return fmt.Errorf("connection: remote QPN %#x private data %q, want %#x and the REQ's user data",
						info.RemoteQPN, short(info.PrivateData), r.TesterQPN)
				}
				return qpIs(r, s.req.StartingPSN, s.rep.StartingPSN)
			}),
		},
		Break: outBreak("names another comm ID in the REP", rocepeer.IsCM(mad.AttrREP), commIDAt(4)),
	}
}

func cmREJSent() Case {
	return Case{
		ID: "12.6.7/rej-consumer", Section: "IBTA Vol 1 §12.6.7 (Table 112: reason 28)", Transport: RoCE,
		Title: "rdma_reject answers a REQ with a REJ: reason 28 (consumer), message REQ, the REQ's comm ID and TID, private data",
		Setup: cmSetup, Needs: cmNeeds,
		Steps: []Step{
			dutListens(true, "no thanks"),
			cmStep("the REJ", func(r *Run) error {
				m, err := cmExpect(r, mad.AttrREJ, DefaultWithin)
				if err != nil {
					return err
				}
				var j mad.REJ
				j.Decode(m)
				switch {
				case m.TID() != cmOf(r).reqTID:
					return fmt.Errorf("REJ TID %#x, want the REQ's %#x", m.TID(), cmOf(r).reqTID)
				case j.RemoteCommID != testerCommID(r) || j.MessageRejected != mad.MsgREQ:
					return fmt.Errorf("REJ remote comm ID %#x message %d, want %#x and 0 (REQ)", j.RemoteCommID, j.MessageRejected, testerCommID(r))
				case j.Reason != mad.RejConsumerReject:
					return fmt.Errorf("REJ reason %d (%v), want 28 (consumer reject)", j.Reason, j.Reason)
				case !bytes.HasPrefix(j.PrivateData, []byte("no thanks")):
					return fmt.Errorf("REJ private data %q, want %q", short(j.PrivateData), "no thanks")
				}
				_, err = awaitCall(r)
				return err
			}),
		},
		Break: outBreak("gives another reason in the REJ", rocepeer.IsCM(mad.AttrREJ), rocepeer.EditCM(func(d []byte) { d[11] ^= 0x10 })),
	}
}

func cmREJReceived() Case {
	return Case{
		ID: "12.6.7/rej-received", Section: "IBTA Vol 1 §12.6.7, §12.9.5", Transport: RoCE,
		Title: "a REJ to the DUT's REQ: rdma_connect fails as rejected, with the REJ's reason and private data",
		Setup: cmSetup, Needs: cmNeeds,
		Steps: []Step{
			dutConnects("conform-req"),
			cmStep("REJ (consumer, private data)", func(r *Run) error {
				if err := takeREQ(r); err != nil {
					return err
				}
				s := cmOf(r)
				rej := mad.REJ{LocalCommID: testerCommID(r), RemoteCommID: s.req.LocalCommID, MessageRejected: mad.MsgREQ,
					Reason: mad.RejConsumerReject, PrivateData: []byte("go away")}
				return cmSend(r, &rej, s.reqTID)
			}),
			cmStep("rdma_connect: rejected, reason 28, the private data", func(r *Run) error {
				_, err := awaitCall(r)
				var ae *agentproto.Error
				if !errors.As(err, &ae) || ae.Code != agentproto.CodeRejected {
					return fmt.Errorf("rdma_connect: %v, want a rejection", err)
				}
				if ae.Reject == nil {
					return fmt.Errorf("%w: the DUT reports no reject detail", ErrNotApplicable)
				}
				r.Note("rejected: reason %d", ae.Reject.Reason)
				if ae.Reject.Reason != uint16(mad.RejConsumerReject) || !bytes.HasPrefix(ae.Reject.PrivateData, []byte("go away")) {
					return fmt.Errorf("rejection reason %d private data %q, want 28 and %q", ae.Reject.Reason,
						short(ae.Reject.PrivateData), "go away")
				}
				return nil
			}),
		},
		Break: inBreak("reads another reason from the REJ", rocepeer.IsCM(mad.AttrREJ), rocepeer.EditCM(func(d []byte) { d[11] ^= 0x10 })),
	}
}

// established connects the DUT (active) through REQ, REP, RTU.
func established() Step {
	return cmStep("connection up (REQ, REP, RTU)", func(r *Run) error {
		if err := dutConnects("conform-req").Do(r); err != nil {
			return err
		}
		if err := takeREQ(r); err != nil {
			return err
		}
		if err := repAndRTU(r); err != nil {
			return err
		}
		info, err := awaitCall(r)
		if err == nil {
			r.Vars["peer.conn"] = info.H
		}
		return err
	})
}

// drepCrossing takes the DUT's DREP. The DUT's own DREQ may cross ours
// (its application disconnected at the same time): the tester answers it
// with a DREP, as §12.9.7 has both sides do, and waits on.
func drepCrossing(r *Run) (mad.MAD, error) {
	for range 2 {
		f, ok := nextGSI(r, r.Bound(DefaultWithin))
		if !ok {
			break
		}
		r.pending = append([]Frame{f}, r.pending...)
		if m := rocepeer.CMFrom(&f.F.Packet); f.Err != nil || m == nil || m.AttrID() != mad.AttrDREQ {
			return cmExpect(r, mad.AttrDREP, DefaultWithin)
		}
		m, err := cmExpect(r, mad.AttrDREQ, DefaultWithin)
		if err != nil {
			return nil, err
		}
		var q mad.DREQ
		q.Decode(m)
		if err := cmSend(r, &mad.DREP{LocalCommID: testerCommID(r), RemoteCommID: q.LocalCommID}, m.TID()); err != nil {
			return nil, err
		}
	}
	return cmExpect(r, mad.AttrDREP, DefaultWithin)
}

func cmDREQFromTester() Case {
	return Case{
		ID: "12.6.11/drep", Section: "IBTA Vol 1 §12.6.10, §12.6.11, §12.9.7", Transport: RoCE,
		Title: "a DREQ for an established connection: a DREP with both comm IDs and the DREQ's TID; the DUT's QP leaves RTS",
		Setup: cmSetup, Needs: cmNeeds,
		Steps: []Step{
			established(),
			cmStep("DREQ; the DREP", func(r *Run) error {
				s := cmOf(r)
				const tid = 0x0000_0002_C0DE_0002
				if err := cmSend(r, &mad.DREQ{LocalCommID: testerCommID(r), RemoteCommID: s.req.LocalCommID, RemoteQPN: r.QP.QPN}, tid); err != nil {
					return err
				}
				// The application answers RDMA_CM_EVENT_DISCONNECTED with
				// rdma_disconnect, as rping and perftest do: Linux's CM
				// sends the DREP then, rnic's at once.
				h, _ := r.Vars["peer.conn"].(uint32)
				background(r, func() (agentproto.CMConnInfo, error) { return agentproto.CMConnInfo{}, r.Agent.CMDisconnect(h) })
				m, err := drepCrossing(r)
				if err != nil {
					return err
				}
				var d mad.DREP
				d.Decode(m)
				if d.LocalCommID != s.req.LocalCommID || d.RemoteCommID != testerCommID(r) || m.TID() != tid {
					return fmt.Errorf("DREP comm IDs local %#x remote %#x TID %#x, want %#x, %#x, %#x", d.LocalCommID,
						d.RemoteCommID, m.TID(), s.req.LocalCommID, testerCommID(r), uint64(tid))
				}
				return nil
			}),
			cmStep("the QP is in ERR", func(r *Run) error {
				deadline := time.Now().Add(r.Bound(time.Second))
				for {
					err := QPState(verbs.QPSErr).Do(r)
					if err == nil || time.Now().After(deadline) {
						return err
					}
					time.Sleep(10 * time.Millisecond)
				}
			}),
		},
		Break: &Break{Name: "never answers a DREQ", Out: rocepeer.Drop(rocepeer.IsCM(mad.AttrDREP))},
	}
}

func cmDREQFromDUT() Case {
	return Case{
		ID: "12.6.10/dreq", Section: "IBTA Vol 1 §12.6.10, §12.9.7", Transport: RoCE,
		Title: "rdma_disconnect sends a DREQ naming both comm IDs and the remote QPN; the DREP completes it",
		Setup: cmSetup, Needs: cmNeeds,
		Steps: []Step{
			established(),
			cmStep("DUT disconnects; the DREQ; DREP", func(r *Run) error {
				h, _ := r.Vars["peer.conn"].(uint32)
				background(r, func() (agentproto.CMConnInfo, error) { return agentproto.CMConnInfo{}, r.Agent.CMDisconnect(h) })
				m, err := cmExpect(r, mad.AttrDREQ, DefaultWithin)
				if err != nil {
					return err
				}
				s := cmOf(r)
				var d mad.DREQ
				d.Decode(m)
				if d.LocalCommID != s.req.LocalCommID || d.RemoteCommID != testerCommID(r) || d.RemoteQPN != r.TesterQPN {
					return fmt.Errorf("DREQ comm IDs local %#x remote %#x remote QPN %#x, want %#x, %#x, %#x", d.LocalCommID,
						d.RemoteCommID, d.RemoteQPN, s.req.LocalCommID, testerCommID(r), r.TesterQPN)
				}
				if err := cmSend(r, &mad.DREP{LocalCommID: testerCommID(r), RemoteCommID: s.req.LocalCommID}, m.TID()); err != nil {
					return err
				}
				_, err = awaitCall(r)
				return err
			}),
		},
		Break: outBreak("names another QPN in the DREQ", rocepeer.IsCM(mad.AttrDREQ), rocepeer.EditCM(func(d []byte) { d[10] ^= 1 })),
	}
}

// cmMRA: an MRA for the REQ tells the DUT the answer takes longer
// (§12.6.6): the DUT keeps waiting instead of giving up, and completes
// with the REP that follows.
func cmMRA() Case {
	return Case{
		ID: "12.6.6/mra", Section: "IBTA Vol 1 §12.6.6, §12.9.4", Transport: RoCE,
		Title: "an MRA for the REQ, then a REP 300 ms later: the DUT waits for it and completes the connection",
		Setup: cmSetup, Needs: cmNeeds,
		Steps: []Step{
			dutConnects("conform-req"),
			cmStep("REQ, MRA, a pause, REP, RTU", func(r *Run) error {
				if err := takeREQ(r); err != nil {
					return err
				}
				s := cmOf(r)
				mra := mad.MRA{LocalCommID: testerCommID(r), RemoteCommID: s.req.LocalCommID, MessageMRAed: mad.MsgREQ, ServiceTimeout: 22}
				if err := cmSend(r, &mra, s.reqTID); err != nil {
					return err
				}
				if err := (ExpectNone{What: "anything while the tester works", For: 300 * time.Millisecond}).Do(r); err != nil {
					return err
				}
				return repAndRTU(r)
			}),
			cmStep("rdma_connect returns", func(r *Run) error {
				_, err := awaitCall(r)
				if err == nil {
					err = qpIs(r, cmOf(r).rep.StartingPSN, cmOf(r).req.StartingPSN)
				}
				return err
			}),
		},
		Break: inBreak("takes an MRA for a REJ", rocepeer.IsCM(mad.AttrMRA), func(f *wire.Frame) {
			if m := rocepeer.CMFrom(&f.Packet); m != nil {
				m[17] = byte(mad.AttrREJ) // the attribute ID's low byte: MRA 0x11 → REJ 0x12
			}
		}),
	}
}
