// iWARP cases: enhanced connection setup, RFC 6581 §9.2: the
// peer-to-peer flag A and the Ready-to-Receive (RTR) message.

package conform

import (
	"errors"
	"fmt"

	"github.com/rnic/rnic/cmd/internal/conform/iwport"
	"github.com/rnic/rnic/iwarp/wire"
)

// iwP2PRequest is an enhanced Request asking for peer-to-peer mode with the
// RTR kinds given.
func iwP2PRequest(write, read, send bool) *wire.MPAFields {
	r := iwDefaultRequest()
	r.IRDORD.PeerToPeer, r.IRDORD.WriteRTR, r.IRDORD.ReadRTR, r.IRDORD.SendRTR = true, write, read, send
	return &r
}

// iwMPAIRD and iwMPAORD are the offsets of the IRD word (A, B) and the ORD
// iwWord (C, D) in an enhanced MPA frame.
const (
	iwMPAIRD = wire.MPAHeaderLen
	iwMPAORD = wire.MPAHeaderLen + 2
)

// iwOneRTR checks that a Reply echoes A and picks exactly the kind want.
func iwOneRTR(want string) func(r wire.MPAFields) error {
	return func(r wire.MPAFields) error {
		v := r.IRDORD
		if !r.Enhanced || !v.PeerToPeer {
			return fmt.Errorf("the Reply S=%v A=%v to a peer-to-peer Request: A not echoed", r.Enhanced, v.PeerToPeer)
		}
		got := map[string]bool{"write": v.WriteRTR, "read": v.ReadRTR, "send": v.SendRTR}
		for k, on := range got {
			if on != (k == want) {
				return fmt.Errorf("the Reply RTR flags write=%v read=%v send=%v, want %s alone", v.WriteRTR, v.ReadRTR, v.SendRTR, want)
			}
		}
		return nil
	}
}

// iwCheckRTR checks the DUT's first FPDU against the RTR the tester's Reply
// chose.
func iwCheckRTR(s *iwSession) error {
	if !s.req.HasIRDORD() || !s.req.IRDORD().PeerToPeer {
		return fmt.Errorf("%w: the DUT's Request does not ask for peer-to-peer mode", ErrNotApplicable)
	}
	rep, f := s.rep.IRDORD(), s.rtr
	if f == nil || f.Err != nil {
		return errors.New("no RTR from the DUT")
	}
	d := f.Hdr.DDP
	ok := len(f.Seg.Payload()) == 0 && d.Last
	switch {
	case rep.WriteRTR:
		ok = ok && d.Opcode == wire.OpWrite
	case rep.ReadRTR:
		ok = d.Opcode == wire.OpReadRequest && f.Hdr.ReadRequest.Size == 0
	case rep.SendRTR:
		ok = ok && d.Opcode == wire.OpSend
	}
	if !ok {
		return fmt.Errorf("the DUT's first FPDU %v is not the chosen RTR", f)
	}
	return nil
}

// iwRefusedOrNoRTR wants a Request without a usable RTR refused: a Reply
// with R, or a close; a DUT that accepts anyway must end the connection
// with the LLP Terminate "no matching RTR option" (RFC 6581 §9, 0x07).
var iwRefusedOrNoRTR = IW{"expect the connection refused, or ended with 'no matching RTR'", func(s *iwSession) error {
	m, err := s.port.RecvMPA(s.wait())
	switch {
	case errors.Is(err, iwport.ErrClosed):
		s.r.Note("stream closed without a Reply")
		return nil
	case err != nil:
		return fmt.Errorf("neither a reject nor a close: %w", err)
	}
	s.r.Note("#%d← %s", m.Frame, iwMPAString(m))
	if m.Reject {
		return nil
	}
	s.rep = m.Raw
	s.startFPDUs()
	fr, err := s.recvTerminate()
	if err != nil {
		return fmt.Errorf("the DUT accepted (#%d←) and did not terminate: %w", m.Frame, err)
	}
	return s.judgeTerminate(fr, func(fr *iwport.Frame) error {
		if fr.Term.Code != wire.TermLLPNoMatchingRTR {
			return fmt.Errorf("the DUT accepted, then sent Terminate %#04x, want %#04x", uint16(fr.Term.Code), uint16(wire.TermLLPNoMatchingRTR))
		}
		return nil
	})
}}

var iwRTRCases = []Case{{
	ID: "RFC6581-9.2/rtr-write", Section: "RFC 6581 §9.2", Title: "A is echoed and the zero-length Write RTR chosen when it is the only one offered",
	Transport: IWARP, Setup: iwSetup(IWConn{Request: iwP2PRequest(true, false, false)}, 0, 0),
	Steps: []Step{CheckReply("A and RTR", iwOneRTR("write"))},
	Break: iwBreak("chooses the Write and the Read RTR", iwEditMPA(iwport.Out, func(b []byte) {
		if len(b) > iwMPAORD {
			b[iwMPAORD] |= 0x40
		}
	})),
}, {
	ID: "RFC6581-9.2/rtr-read", Section: "RFC 6581 §9.2", Title: "the zero-length Read RTR is answered with a zero-length Read Response",
	Transport: IWARP, Setup: iwSetup(IWConn{Request: iwP2PRequest(false, true, false)}, 0, 0),
	Steps: []Step{
		CheckReply("A and RTR", iwOneRTR("read")),
		ExpectFPDU("zero-length Read Response", func(_ *iwSession, f *iwport.Frame) error {
			d := f.Hdr.DDP
			if d.Opcode != wire.OpReadResponse || !d.Last || len(f.Seg.Payload()) != 0 || d.STag != 1 {
				return fmt.Errorf("want a zero-length Read Response to STag 1 with L=1, got %v", f)
			}
			return nil
		}),
	},
	Break: iwBreak("does not answer the Read RTR", iwDropFPDU(iwport.Out, wire.OpReadResponse)),
}, {
	ID: "RFC6581-9.2/no-rtr", Section: "RFC 6581 §9.2", Title: "a peer-to-peer Request offering no RTR kind is refused",
	Transport: IWARP, Setup: iwSetup(IWConn{Manual: true}, 0, 0),
	Steps: []Step{SendRequest(*iwP2PRequest(false, false, false)), iwRefusedOrNoRTR},
	Break: iwBreak("assumes a Write RTR", iwEditMPA(iwport.In, func(b []byte) {
		if len(b) > iwMPAORD {
			b[iwMPAORD] |= 0x80
		}
	})),
}, {
	ID: "RFC6581-9.2/rtr-first", Section: "RFC 6581 §9.2", Title: "an initiator in peer-to-peer mode sends the chosen RTR as its first FPDU",
	Transport: IWARP, Setup: iwSetup(IWConn{DUTConnects: true}, 0, 0),
	Steps: []Step{IW{"check the DUT's RTR", iwCheckRTR}},
	Break: iwBreak("sends no RTR", iwDropFPDU(iwport.Out, wire.OpWrite)),
}}

func init() {
	Register(iwRTRCases...)
}
