package iwconform

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/rnic/rnic/iwarp/wire"
	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/tools/conform/iwport"
)

// Setup says how a case's connection is made.
type Setup struct {
	// DUTConnects makes the DUT the MPA initiator (the tester listens);
	// by default the DUT listens and the tester connects.
	DUTConnects bool
	// Manual stops after the TCP connection (and the DUT's Accept or
	// Connect started): the case's steps do the MPA exchange.
	Manual bool
	// Request is the tester's MPA Request (DUT listens); nil: DefaultRequest.
	Request *wire.MPAFields
	// Reply makes the tester's MPA Reply from the DUT's Request (DUT
	// connects); nil: DefaultReply.
	Reply func(req wire.MPAFields) wire.MPAFields
	// IRD and ORD are what the DUT's ULP asks for (1 if zero).
	IRD, ORD uint8
	// PrivateData is what the DUT's ULP sends.
	PrivateData []byte
	// Access is the DUT MR's access (all if zero).
	Access memory.Access
	// Recvs is how many 256-byte receives the DUT posts before the
	// connection (WR IDs 100, 101, ... at offsets 0, 256, ...).
	Recvs int
}

// DefaultRequest is what the tester sends unless a case says otherwise:
// MPA Rev 2 with the RFC 6581 words (IRD and ORD 8, no RTR), CRC asked.
func DefaultRequest() wire.MPAFields {
	return wire.MPAFields{CRC: true, Rev: wire.MPARev2, Enhanced: true, IRDORD: wire.IRDORD{IRD: 8, ORD: 8}}
}

// DefaultReply answers the DUT's Request: its revision, CRC, the RFC 6581
// words (IRD and ORD 8) when it sent them, and, when it asked for an RTR,
// A echoed with the first kind it offered of Write, Read, Send.
func DefaultReply(req wire.MPAFields) wire.MPAFields {
	rep := wire.MPAFields{Reply: true, CRC: true, Rev: req.Rev, Enhanced: req.Enhanced && req.Rev >= wire.MPARev2}
	if rep.Enhanced {
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
	}
	return rep
}

func (st *Setup) irdord() (uint8, uint8) { return max(st.IRD, 1), max(st.ORD, 1) }

// dutListens: the DUT listens and accepts; the tester connects.
func (s *Session) dutListens(st *Setup) error {
	port, err := s.DUT.Listen(s.Ctx, 0)
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	ird, ord := st.irdord()
	go func() {
		pd, err := s.DUT.Accept(s.Ctx, s.QP, st.PrivateData, ird, ord)
		s.AcceptPD = pd
		s.Accepted <- err
	}()
	local := s.testerAddr()
	if local == s.DUT.Addr() {
		local = netip.Addr{}
	}
	if s.Port, err = iwport.Dial(s.Ctx, local, netip.AddrPortFrom(s.DUT.Addr(), port), s.Env.Pcap); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	if st.Manual {
		return nil
	}
	req := DefaultRequest()
	if st.Request != nil {
		req = *st.Request
	}
	if _, err := s.SendRequest(&req); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	rep, err := s.Port.RecvMPA(s.wait())
	if err != nil {
		return fmt.Errorf("setup: MPA Reply: %w", err)
	}
	if rep.Reject || !rep.Reply {
		return fmt.Errorf("setup: the DUT refused the connection (frame %d: reply=%v R=%v)", rep.Frame, rep.Reply, rep.Reject)
	}
	s.Rep = rep.Raw
	s.startFPDUs()
	if v := rep.IRDORD; rep.Enhanced && v.PeerToPeer {
		if err := s.sendRTR(v); err != nil {
			return err
		}
	}
	return s.established()
}

// SendRequest sends the tester's MPA Request and keeps it.
func (s *Session) SendRequest(f *wire.MPAFields) (int, error) {
	b, err := wire.AppendMPAFrame(nil, f)
	if err == nil {
		s.Req = b
	}
	return s.Port.SendMPA(f)
}

// startFPDUs sets the port's framing from the two MPA frames.
func (s *Session) startFPDUs() {
	i2r, r2i := wire.Negotiate(s.Req, s.Rep)
	if s.listener != nil { // the DUT initiated
		s.Port.SetFraming(r2i, i2r)
		return
	}
	s.Port.SetFraming(i2r, r2i)
}

// sendRTR sends the zero-length RTR the DUT's Reply chose.
func (s *Session) sendRTR(v wire.IRDORD) error {
	var h wire.Headers
	switch {
	case v.WriteRTR:
		h.DDP = wire.DDPFields{Opcode: wire.OpWrite, Last: true, STag: 1}
	case v.ReadRTR:
		h.DDP = wire.DDPFields{Opcode: wire.OpReadRequest, Last: true, QN: wire.QNReadRequest, MSN: s.nextMSN(wire.QNReadRequest)}
		h.ReadRequest = wire.ReadRequestFields{SinkSTag: 1, SourceSTag: 1}
	case v.SendRTR:
		h.DDP = wire.DDPFields{Opcode: wire.OpSend, Last: true, QN: wire.QNSend, MSN: s.nextMSN(wire.QNSend)}
	default:
		return errors.New("setup: the DUT's Reply has A set but chose no RTR")
	}
	sent, err := s.Port.SendSegment(&h, nil, iwport.Tx{})
	if err != nil {
		return fmt.Errorf("setup: RTR: %w", err)
	}
	s.Note("RTR sent (frame %d)", sent.Frame)
	return nil
}

// established waits for the DUT's Accept or Connect.
func (s *Session) established() error {
	ctx, cancel := context.WithTimeout(s.Ctx, s.wait())
	defer cancel()
	select {
	case err := <-s.Accepted:
		if err != nil {
			return fmt.Errorf("setup: the DUT did not establish the connection: %w", err)
		}
		return nil
	case <-ctx.Done():
		return errors.New("setup: the DUT did not establish the connection in time")
	}
}

// nextMSN returns the MSN of the tester's next message on queue qn.
func (s *Session) nextMSN(qn uint32) uint32 {
	m := s.msn[qn&3]
	s.msn[qn&3]++
	return m
}

// dutConnects: the tester listens; the DUT connects.
func (s *Session) dutConnects(st *Setup) error {
	var err error
	if s.listener, err = iwport.Listen(netip.AddrPortFrom(s.testerAddr(), 0), s.Env.Pcap); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	ird, ord := st.irdord()
	go func() { s.Accepted <- s.DUT.Connect(s.Ctx, s.QP, s.listener.Addr(), st.PrivateData, ird, ord) }()
	ctx, cancel := context.WithTimeout(s.Ctx, s.wait())
	defer cancel()
	if s.Port, err = s.listener.Accept(ctx); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	if st.Manual {
		return nil
	}
	req, err := s.Port.RecvMPA(s.wait())
	if err != nil {
		return fmt.Errorf("setup: MPA Request: %w", err)
	}
	s.Req = req.Raw
	mk := DefaultReply
	if st.Reply != nil {
		mk = st.Reply
	}
	rep := mk(req.MPAFields)
	b, err := wire.AppendMPAFrame(nil, &rep)
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	if _, err := s.Port.SendRaw(b); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	s.Rep = b
	s.startFPDUs()
	if v := rep.IRDORD; rep.Enhanced && v.PeerToPeer && !rep.Reject {
		fr, err := s.Port.Recv(s.wait())
		if err != nil {
			return fmt.Errorf("setup: the DUT's RTR: %w", err)
		}
		s.RTR = fr
		s.Note("RTR received (%v)", fr)
	}
	return s.established()
}
