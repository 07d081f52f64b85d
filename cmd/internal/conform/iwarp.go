// The iWARP side of the tester: the run's iWARP port configuration, the
// per-case session (the tester's TCP connection, the two MPA frames, the
// DUT's connection through its rdma_cm) and the connection set-up that
// iWARP cases use as their Setup.Custom.

package conform

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"time"

	"github.com/rnic/rnic/cmd/internal/conform/agentproto"
	"github.com/rnic/rnic/cmd/internal/conform/iwport"
	"github.com/rnic/rnic/iwarp/wire"
	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/transport/pcap"
	"github.com/rnic/rnic/transport/stream"
)

// IWARPPort is the tester's iWARP side (Config.IWARP): its own TCP
// connections from or to Addr (the tester's address; the DUT's when
// invalid) on Network (nil: the host's kernel TCP; a simstream.Network in
// the simulated mode), recorded in Pcap, which numbers the frames of the
// evidence (a capture to io.Discard numbers them too).
type IWARPPort struct {
	Addr    netip.Addr
	Network stream.Network
	Pcap    *pcap.Writer
}

// iwSession is one iWARP case's state, kept in Run.Vars.
type iwSession struct {
	r    *Run
	port *iwport.Port
	lis  *iwport.Listener
	// req and rep are the MPA Request and Reply as sent (by either side).
	req, rep wire.MPAFrame
	// lastSent is the tester's last segment: what a Terminate repeats.
	lastSent iwport.Sent
	// accepted gets the outcome of the DUT's cm_accept or cm_connect.
	accepted chan iwCM
	// rtr is the DUT's RTR when it connected in peer-to-peer mode.
	rtr    *iwport.Frame
	lastRR wire.ReadRequestFields // the DUT's last Read Request
	msn    [4]uint32              // the tester's next MSN per queue
}

// iwCM is the outcome of the DUT's cm call.
type iwCM struct {
	info agentproto.CMConnInfo
	err  error
}

const iwVar = "iwarp"

// iw returns the case's iWARP session.
func iw(r *Run) (*iwSession, error) {
	s, ok := r.Vars[iwVar].(*iwSession)
	if !ok {
		return nil, errors.New("no iWARP connection in this case")
	}
	return s, nil
}

// IWConn says how an iWARP case's connection is made.
type IWConn struct {
	// DUTConnects makes the DUT the MPA initiator (the tester listens);
	// by default the DUT listens and the tester connects.
	DUTConnects bool
	// Manual stops after TCP (with the DUT's cm call under way): the
	// steps do the MPA exchange.
	Manual bool
	// Request is the tester's MPA Request (nil: iwDefaultRequest).
	Request *wire.MPAFields
	// Reply makes the tester's Reply to the DUT's Request (nil:
	// iwDefaultReply).
	Reply func(req wire.MPAFields) wire.MPAFields
	// IRD and ORD are the DUT ULP's (1 if zero); PrivateData its private
	// data.
	IRD, ORD    uint8
	PrivateData []byte
}

// iwMRSize is the size of the DUT's buffer in iWARP cases.
const iwMRSize = 4096

// iwSetup is the Setup of an iWARP case: one MR (access: all remote
// rights if zero), recvs receives of 256 bytes, the connection c.
func iwSetup(c IWConn, access memory.Access, recvs int) Setup {
	if access == 0 {
		access = memory.LocalWrite | memory.RemoteWrite | memory.RemoteRead | memory.RemoteAtomic
	}
	return Setup{MRs: []MR{{Name: DefaultMR, Len: iwMRSize, Access: access}}, Recvs: recvs, RecvLen: 256,
		Custom: func(r *Run) error { return iwStart(r, &c) }}
}

// iwStart brings the DUT's QP to INIT with its receives, then connects.
func iwStart(r *Run, c *IWConn) error {
	if r.Cfg.IWARP == nil {
		return fmt.Errorf("%w: %w", ErrNotApplicable, ErrNoStreamPort)
	}
	if err := r.bringUp(verbs.QPTypeRC, verbs.QPSInit); err != nil {
		return err
	}
	if err := r.postSetupRecvs(&r.Case.Setup); err != nil {
		return err
	}
	s := &iwSession{r: r, accepted: make(chan iwCM, 1), msn: [4]uint32{1, 1, 1, 1}}
	r.Vars[iwVar] = s
	r.Cleanup(s.close)
	if c.DUTConnects {
		return s.dutConnects(c)
	}
	return s.dutListens(c)
}

// close ends the tester's side of the case.
func (s *iwSession) close() {
	if s.port != nil {
		s.port.Abort()
	}
	if s.lis != nil {
		s.lis.Close()
	}
}

func (s *iwSession) wait() time.Duration  { return s.r.Bound(DefaultWithin) }
func (s *iwSession) quiet() time.Duration { return s.r.Bound(DefaultQuiet) }

func (s *iwSession) testerAddr() netip.Addr {
	if a := s.r.Cfg.IWARP.Addr; a.IsValid() {
		return a
	}
	return s.r.DUTAddr
}

// param is the DUT ULP's connection parameters.
func (c *IWConn) param() agentproto.ConnParam {
	return agentproto.ConnParam{ResponderResources: max(c.IRD, 1), InitiatorDepth: max(c.ORD, 1)}
}

// cmWait bounds the DUT's cm call: long enough for the exchange, short
// for a manual case, whose DUT may rightly never establish (the agent
// answers nothing else meanwhile).
func (s *iwSession) cmWait(c *IWConn) int {
	if c.Manual {
		return int(s.r.Bound(time.Second) / time.Millisecond)
	}
	return int(2 * s.wait() / time.Millisecond)
}

// iwDefaultRequest is the tester's Request unless a case says otherwise:
// MPA Rev 2 with the RFC 6581 words (IRD and ORD 8, no RTR), CRC asked.
func iwDefaultRequest() wire.MPAFields {
	return wire.MPAFields{CRC: true, Rev: wire.MPARev2, Enhanced: true, IRDORD: wire.IRDORD{IRD: 8, ORD: 8}}
}

// iwDefaultReply answers the DUT's Request: its revision, CRC, the RFC
// 6581 words (IRD and ORD 8) when it sent them, and, when it asked for an
// RTR, A echoed with the first kind it offered of Write, Read, Send.
func iwDefaultReply(req wire.MPAFields) wire.MPAFields {
	rep := wire.MPAFields{Reply: true, CRC: true, Rev: req.Rev, Enhanced: req.Enhanced && req.Rev >= wire.MPARev2}
	if !rep.Enhanced {
		return rep
	}
	rep.IRDORD = wire.IRDORD{IRD: 8, ORD: 8}
	if o := req.IRDORD; o.PeerToPeer {
		rep.IRDORD.PeerToPeer = true
		switch {
		case o.WriteRTR:
			rep.IRDORD.WriteRTR = true
		case o.ReadRTR:
			rep.IRDORD.ReadRTR = true
		case o.SendRTR:
			rep.IRDORD.SendRTR = true
		}
	}
	return rep
}

// dutListens: the DUT listens and accepts; the tester connects.
func (s *iwSession) dutListens(c *IWConn) error {
	r := s.r
	l, err := r.Agent.CMListen(0)
	if err != nil {
		return err
	}
	go func() {
		info, err := r.Agent.CMAccept(agentproto.CMAccept{Listener: l.H, QP: r.QP.H, PrivateData: c.PrivateData,
			Param: c.param(), WaitMS: s.cmWait(c)})
		s.accepted <- iwCM{info, err}
	}()
	local := s.testerAddr()
	if local == r.DUTAddr {
		local = netip.Addr{}
	}
	ctx, cancel := iwContext(s.wait())
	defer cancel()
	if s.port, err = iwport.Dial(ctx, r.Cfg.IWARP.Network, local, netip.AddrPortFrom(r.DUTAddr, l.Port), r.Cfg.IWARP.Pcap); err != nil {
		return err
	}
	if c.Manual {
		return nil
	}
	req := iwDefaultRequest()
	if c.Request != nil {
		req = *c.Request
	}
	if _, err := s.sendRequest(&req); err != nil {
		return err
	}
	rep, err := s.port.RecvMPA(s.wait())
	if err != nil {
		return fmt.Errorf("MPA Reply: %w", err)
	}
	if rep.Reject || !rep.Reply {
		return fmt.Errorf("the DUT refused the connection (#%d←: reply=%v R=%v)", rep.Frame, rep.Reply, rep.Reject)
	}
	s.r.Note("#%d← %s", rep.Frame, iwMPAString(rep))
	s.rep = rep.Raw
	s.startFPDUs()
	if v := rep.IRDORD; rep.Enhanced && v.PeerToPeer {
		if err := s.sendRTR(v); err != nil {
			return err
		}
	}
	return s.established()
}

// iwMPAString is an MPA frame's fields for the evidence.
func iwMPAString(m *iwport.MPA) string {
	kind := "Request"
	if m.Reply {
		kind = "Reply"
	}
	s := fmt.Sprintf("MPA %s rev %d M=%v C=%v R=%v S=%v", kind, m.Rev, m.Markers, m.CRC, m.Reject, m.Enhanced)
	if v := m.IRDORD; m.Enhanced && m.Rev >= wire.MPARev2 {
		s += fmt.Sprintf(" IRD %d ORD %d A=%v RTR(B,C,D)=%v,%v,%v", v.IRD, v.ORD, v.PeerToPeer, v.SendRTR, v.WriteRTR, v.ReadRTR)
	}
	return s + fmt.Sprintf(" PD %dB", len(m.PrivateData))
}

// sendRequest sends the tester's MPA Request and keeps it.
func (s *iwSession) sendRequest(f *wire.MPAFields) (int, error) {
	if b, err := wire.AppendMPAFrame(nil, f); err == nil {
		s.req = b
	}
	return s.port.SendMPA(f)
}

// startFPDUs sets the port's framing from the two MPA frames.
func (s *iwSession) startFPDUs() {
	i2r, r2i := wire.Negotiate(s.req, s.rep)
	if s.lis != nil { // the DUT initiated
		s.port.SetFraming(r2i, i2r)
		return
	}
	s.port.SetFraming(i2r, r2i)
}

// sendRTR sends the zero-length RTR the DUT's Reply chose.
func (s *iwSession) sendRTR(v wire.IRDORD) error {
	var h wire.Headers
	switch {
	case v.WriteRTR:
		h.DDP = wire.DDPFields{Opcode: wire.OpWrite, Last: true, STag: 1}
	case v.ReadRTR:
		h = iwSendHdr(wire.OpReadRequest, wire.QNReadRequest, s.nextMSN(wire.QNReadRequest), 0, true)
		h.ReadRequest = wire.ReadRequestFields{SinkSTag: 1, SourceSTag: 1}
	case v.SendRTR:
		h = s.send(wire.OpSend)
	default:
		return errors.New("the DUT's Reply has A set but chose no RTR")
	}
	sent, err := s.port.SendSegment(&h, nil, iwport.Tx{})
	if err != nil {
		return fmt.Errorf("RTR: %w", err)
	}
	s.r.Note("RTR #%d→", sent.Frame)
	return nil
}

// established waits for the DUT's cm call to return.
func (s *iwSession) established() error {
	select {
	case res := <-s.accepted:
		if res.err != nil {
			return fmt.Errorf("the DUT did not establish the connection: %w", res.err)
		}
		s.accepted <- res // for steps that look at it
		return nil
	case <-time.After(2 * s.wait()):
		return errors.New("the DUT did not establish the connection in time")
	}
}

// nextMSN returns the MSN of the tester's next message on queue qn.
func (s *iwSession) nextMSN(qn uint32) uint32 {
	m := s.msn[qn&3]
	s.msn[qn&3]++
	return m
}

// dutConnects: the tester listens; the DUT connects.
func (s *iwSession) dutConnects(c *IWConn) error {
	r := s.r
	var err error
	if s.lis, err = iwport.Listen(r.Cfg.IWARP.Network, netip.AddrPortFrom(s.testerAddr(), 0), r.Cfg.IWARP.Pcap); err != nil {
		return err
	}
	go func() {
		a := s.lis.Addr()
		info, err := r.Agent.CMConnect(agentproto.CMConnect{QP: r.QP.H, Addr: a.Addr().String(), Port: a.Port(),
			PrivateData: c.PrivateData, Param: c.param(), WaitMS: s.cmWait(c)})
		s.accepted <- iwCM{info, err}
	}()
	ctx, cancel := iwContext(s.wait())
	defer cancel()
	if s.port, err = s.lis.Accept(ctx); err != nil {
		return err
	}
	if c.Manual {
		return nil
	}
	req, err := s.port.RecvMPA(s.wait())
	if err != nil {
		return fmt.Errorf("MPA Request: %w", err)
	}
	s.r.Note("#%d← %s", req.Frame, iwMPAString(req))
	s.req = req.Raw
	mk := iwDefaultReply
	if c.Reply != nil {
		mk = c.Reply
	}
	rep := mk(req.MPAFields)
	b, err := wire.AppendMPAFrame(nil, &rep)
	if err != nil {
		return err
	}
	if _, err := s.port.SendRaw(b); err != nil {
		return err
	}
	s.rep = b
	s.startFPDUs()
	if v := rep.IRDORD; rep.Enhanced && v.PeerToPeer && !rep.Reject {
		// A missing RTR is the business of the case that checks it.
		if fr, err := s.port.Recv(s.wait()); err == nil {
			s.rtr = fr
			r.Note("RTR %v", fr)
		} else {
			r.Note("no RTR: %v", err)
		}
	}
	return s.established()
}

// openIWARP gives a run its iWARP port: TCP from and to the tester's
// address (Options.UDP, the address flag of both transports; no TAP:
// the kernel's TCP carries the streams), recorded in Options.Pcap or
// numbered into io.Discard.
func openIWARP(cfg *Config, opt Options) error {
	if opt.TAP != "" {
		return errors.New("conform: the iWARP port uses the host's TCP: give --udp ADDR, not --tap")
	}
	if !opt.UDP.IsValid() {
		return errors.New("conform: the tester needs its address (--udp ADDR)")
	}
	pw := opt.Pcap
	if pw == nil {
		pw, _ = pcap.NewWriter(io.Discard)
	}
	cfg.TesterAddr, cfg.IWARP = opt.UDP, &IWARPPort{Addr: opt.UDP, Pcap: pw}
	return nil
}
