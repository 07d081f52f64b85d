package iwconform

import (
	"errors"
	"fmt"

	"github.com/rnic/rnic/iwarp/wire"
	"github.com/rnic/rnic/nic/tools/conform/iwport"
)

// Enhanced connection setup, RFC 6581 §9.2: the peer-to-peer flag A and
// the Ready-to-Receive (RTR) message.

// p2pRequest is an enhanced Request asking for peer-to-peer mode with the
// RTR kinds given.
func p2pRequest(write, read, send bool) *wire.MPAFields {
	r := DefaultRequest()
	r.IRDORD.PeerToPeer, r.IRDORD.WriteRTR, r.IRDORD.ReadRTR, r.IRDORD.SendRTR = true, write, read, send
	return &r
}

// ddpIRD is the offset of the IRD word (A, B flags) in an MPA frame, and
// ddpORD of the ORD word (C, D flags).
const (
	mpaIRD = wire.MPAHeaderLen
	mpaORD = wire.MPAHeaderLen + 2
)

// oneRTR checks that a Reply echoes A and picks exactly the kind want.
func oneRTR(want string) func(r wire.MPAFields) error {
	return func(r wire.MPAFields) error {
		v := r.IRDORD
		if !r.Enhanced || !v.PeerToPeer {
			return fmt.Errorf("Reply S=%v A=%v to a peer-to-peer Request: A not echoed", r.Enhanced, v.PeerToPeer)
		}
		got := map[string]bool{"write": v.WriteRTR, "read": v.ReadRTR, "send": v.SendRTR}
		for k, on := range got {
			if on != (k == want) {
				return fmt.Errorf("Reply RTR flags write=%v read=%v send=%v, want %s alone", v.WriteRTR, v.ReadRTR, v.SendRTR, want)
			}
		}
		return nil
	}
}

func rtrCases() []Case {
	return []Case{{
		ID: "RFC6581-9.2-rtr-write", Section: "RFC 6581 §9.2", Title: "A echoed and the zero-length Write RTR chosen when it is the only one offered",
		Setup: Setup{Request: p2pRequest(true, false, false)},
		Steps: []Step{CheckReply("A and RTR", oneRTR("write"))},
		Break: editMPA(iwport.Out, func(b []byte) {
			if len(b) > mpaORD {
				b[mpaORD] ^= 0xC0 // Read instead of Write
			}
		}),
	}, {
		ID: "RFC6581-9.2-rtr-read", Section: "RFC 6581 §9.2", Title: "the zero-length Read RTR is answered with a zero-length Read Response",
		Setup: Setup{Request: p2pRequest(false, true, false)},
		Steps: []Step{
			CheckReply("A and RTR", oneRTR("read")),
			ExpectFrame("zero-length Read Response", func(s *Session, f *iwport.Frame) error {
				d := f.Hdr.DDP
				if d.Opcode != wire.OpReadResponse || !d.Last || len(f.Seg.Payload()) != 0 || d.STag != 1 {
					return fmt.Errorf("want a zero-length Read Response to STag 1 with L=1, got %v", f)
				}
				return nil
			}),
		},
		Break: dropFPDU(iwport.Out, wire.OpReadResponse),
	}, {
		ID: "RFC6581-9.2-no-rtr", Section: "RFC 6581 §9.2", Title: "a peer-to-peer Request offering no RTR kind is refused",
		Setup: Setup{Manual: true},
		Steps: []Step{SendRequest(*p2pRequest(false, false, false)), ExpectRefused()},
		Break: editMPA(iwport.In, func(b []byte) {
			if len(b) > mpaORD {
				b[mpaORD] |= 0x80 // the Write RTR offered after all
			}
		}),
	}, {
		ID: "RFC6581-9.2-rtr-first", Section: "RFC 6581 §9.2", Title: "an initiator in peer-to-peer mode sends the chosen RTR as its first FPDU",
		Setup: Setup{DUTConnects: true},
		Steps: []Step{Do("check the DUT's RTR", func(s *Session) error {
			req := wire.MPAFrame(s.Req)
			if !req.HasIRDORD() || !req.IRDORD().PeerToPeer {
				return NA("the DUT's Request does not ask for peer-to-peer mode")
			}
			rep := wire.MPAFrame(s.Rep).IRDORD()
			f := s.RTR
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
		})},
		Break: dropFPDU(iwport.Out, wire.OpWrite),
	}}
}
