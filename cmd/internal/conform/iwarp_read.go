// iWARP cases: RDMAP RDMA Read, RFC 5040 §4.4 and §5.2, at the data
// source (the tester reads the DUT) and at the data sink (the DUT reads
// the tester), with the IRD and ORD limits of RFC 6581 §9.1.

package conform

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/rnic/rnic/cmd/internal/conform/iwport"
	"github.com/rnic/rnic/iwarp/wire"
	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
)

// The tester's (made up) Data Sink STag and TO.
const iwSinkSTag, iwSinkTO = 0x7E57_0001, 0x10_0000

// iwReadOf sends a Read Request for n octets at the DUT buffer's offset off
// under stag.
func iwReadOf(name string, stag func(s *iwSession) uint32, off uint64, n uint32) IW {
	return IWSend(name, func(s *iwSession) (wire.Headers, []byte) {
		_, addr := s.mr()
		return s.readReqHdr(iwSinkSTag, iwSinkTO, n, stag(s), addr+off), nil
	}, iwport.Tx{})
}

// iwReadResponse wants one Read Response to the tester's sink, with L and
// the n octets the DUT's buffer holds (iwPattern(n, 11)).
func iwReadResponse(n int) IW {
	return ExpectFPDU("Read Response", func(_ *iwSession, f *iwport.Frame) error {
		d := f.Hdr.DDP
		if d.Opcode != wire.OpReadResponse || d.STag != iwSinkSTag || d.TO != iwSinkTO || !d.Last {
			return fmt.Errorf("want one Read Response to STag %#x TO %#x with L=1, got %v", iwSinkSTag, iwSinkTO, f)
		}
		if p, want := f.Seg.Payload(), iwPattern(n, 11); !bytes.Equal(p, want) {
			return fmt.Errorf("the Read Response payload %s, want %s", short(p), short(want))
		}
		return nil
	})
}

// iwBeyondIRD sends one Read Request more than the IRD the DUT's Reply
// announced (2 when it announced none: the case asks for IRD 1) in one
// segment, so that the DUT has them all before it answers any. The
// announced IRD, not the one asked for, is what binds the tester (siw
// announces its own 8 whatever the application asked).
var iwBeyondIRD = IW{"send the announced IRD + 1 Read Requests at once", func(s *iwSession) error {
	n := 2
	if s.rep.HasIRDORD() {
		n = int(s.rep.IRDORD().IRD) + 1
	}
	if n > 65 {
		return fmt.Errorf("%w: the DUT announced IRD %d, more than the tester sends at once", ErrNotApplicable, n-1)
	}
	k, addr := s.mr()
	var b []byte
	for i := range n {
		h := s.readReqHdr(iwSinkSTag, iwSinkTO+uint64(i)*2048, 2048, k, addr)
		b = wire.AppendFPDU(b, s.port.Framing(), 0, wire.AppendSegment(nil, &h, nil), nil)
	}
	frame, err := s.port.SendRaw(b)
	s.r.Note("#%d→ %d Read Requests (DUT IRD %d)", frame, n, s.rep.IRDORD().IRD)
	return err
}}

// iwReadsUpToIRD sends as many Read Requests at once as the IRD the
// DUT's Reply announced (at most 8) and wants every one answered.
var iwReadsUpToIRD = IW{"Read Requests up to the announced IRD, all answered", func(s *iwSession) error {
	if !s.rep.HasIRDORD() || s.rep.IRDORD().IRD == 0 {
		return fmt.Errorf("%w: the DUT's Reply announces no IRD", ErrNotApplicable)
	}
	n := min(int(s.rep.IRDORD().IRD), 8)
	k, addr := s.mr()
	var b []byte
	for i := range n {
		h := s.readReqHdr(iwSinkSTag, iwSinkTO+uint64(i)*64, 64, k, addr)
		b = wire.AppendFPDU(b, s.port.Framing(), 0, wire.AppendSegment(nil, &h, nil), nil)
	}
	frame, err := s.port.SendRaw(b)
	if err != nil {
		return err
	}
	s.r.Note("#%d→ %d Read Requests (the DUT's IRD %d)", frame, n, s.rep.IRDORD().IRD)
	for i := range n {
		f, err := s.port.Recv(s.wait())
		if err != nil {
			return fmt.Errorf("the Read Response %d of %d: %w", i+1, n, err)
		}
		if f.Err != nil || f.Opcode() != wire.OpReadResponse || f.Hdr.DDP.TO != iwSinkTO+uint64(i)*64 || !f.Hdr.DDP.Last {
			return fmt.Errorf("want the Read Response to request %d of %d, got %v", i+1, n, f)
		}
	}
	s.r.Note("%d Read Responses", n)
	return nil
}}

// iwRDMAPTerminate wants a Terminate of the RDMAP layer, any code.
var iwRDMAPTerminate = IW{"expect an RDMAP Terminate", func(s *iwSession) error {
	fr, err := s.recvTerminate()
	if err != nil {
		return err
	}
	return s.judgeTerminate(fr, func(fr *iwport.Frame) error {
		if fr.Term.Code.Layer() != wire.LayerRDMAP {
			return fmt.Errorf("the Terminate %v, want an RDMAP error", fr.Term.Code)
		}
		return nil
	})
}}

var iwReadCases = []Case{{
	ID: "RFC6581-9.1/ird", Section: "RFC 6581 §9.1, RFC 5040 §5.2", Title: "the DUT serves as many outstanding Read Requests as the IRD its Reply announced",
	Transport: IWARP, Setup: iwSetup(IWConn{IRD: 3, ORD: 2}, 0, 0),
	Steps: []Step{iwReadsUpToIRD, ExpectSilence, QPState(verbs.QPSRTS)},
	Break: iwBreak("announces one more IRD than it serves", iwEditMPA(iwport.Out, func(b []byte) {
		if len(b) >= iwMPAORD {
			binary.BigEndian.PutUint16(b[iwMPAIRD:], binary.BigEndian.Uint16(b[iwMPAIRD:])+1)
		}
	})),
}, {
	ID: "RFC5040-4.4/read", Section: "RFC 5040 §4.4, §5.2", Title: "a Read Request is answered with a Read Response to the sink STag and TO",
	Transport: IWARP, Setup: iwSetup(IWConn{}, 0, 0),
	Steps: []Step{WriteMem{MR: DefaultMR, Off: 64, Data: iwPattern(100, 11)}, iwReadOf("Read Request 100B", iwRKeyOf, 64, 100), iwReadResponse(100)},
	Break: iwBreak("corrupts Read Responses", iwEditFPDU(iwport.Out, wire.OpReadResponse, func(b []byte) { b[len(b)-1] ^= 0xFF })),
}, {
	ID: "RFC5040-4.8/read-stag", Section: "RFC 5040 §4.8, §5.2", Title: "a Read Request with an invalid source STag: Terminate RDMAP 'invalid STag' with the DDP and RDMAP headers",
	Transport: IWARP, Setup: iwSetup(IWConn{}, 0, 0),
	Steps: iwSteps([]Step{iwReadOf("Read Request, invalid source STag", (*iwSession).badKey, 0, 32)},
		iwTerminated(HdrDDPRDMA, wire.TermRDMAPInvalidSTag)),
	Break: iwBreak("sends Terminates without headers", iwTermNoHeaders()),
}, {
	ID: "RFC5040-4.8/read-bounds", Section: "RFC 5040 §4.8, §5.2", Title: "a Read Request past the source's end: Terminate RDMAP 'base or bounds violation'",
	Transport: IWARP, Setup: iwSetup(IWConn{}, 0, 0),
	Steps: iwSteps([]Step{iwReadOf("Read Request across the end", iwRKeyOf, iwMRSize-8, 64)},
		iwTerminated(HdrDDPRDMA, wire.TermRDMAPBaseBounds)),
	Break: iwBreak("reports an invalid STag", iwTermCode(wire.TermRDMAPInvalidSTag)),
}, {
	ID: "RFC5040-4.8/read-access", Section: "RFC 5040 §4.8, §5.2", Title: "a Read Request of a buffer without remote read access: Terminate RDMAP 'access rights violation'",
	Transport: IWARP, Setup: iwSetup(IWConn{}, memory.LocalWrite|memory.RemoteWrite, 0),
	Steps: iwSteps([]Step{iwReadOf("Read Request of a write-only buffer", iwRKeyOf, 0, 32)},
		iwTerminated(HdrDDPRDMA, wire.TermRDMAPAccessRights)),
	Break: iwBreak("reports an invalid STag", iwTermCode(wire.TermRDMAPInvalidSTag)),
}, {
	ID: "RFC5040-4.4/read-msn", Section: "RFC 5041 §5.3, RFC 5040 §4.4", Title: "a Read Request with the wrong MSN on queue 1: Terminate DDP untagged 'MSN range'",
	Transport: IWARP, Setup: iwSetup(IWConn{}, 0, 0),
	Steps: iwSteps([]Step{IWSend("Read Request with MSN 7", func(s *iwSession) (wire.Headers, []byte) {
		k, addr := s.mr()
		h := s.readReqHdr(iwSinkSTag, iwSinkTO, 8, k, addr)
		h.DDP.MSN = 7
		return h, nil
	}, iwport.Tx{})}, iwTerminated(HdrDDP, wire.TermDDPUntaggedMSNRange)),
	Break: iwBreak("reports 'invalid MO'", iwTermCode(wire.TermDDPUntaggedInvalidMO)),
}, {
	ID: "RFC5040-5.2/ird", Section: "RFC 5040 §5.2, RFC 6581 §9.1", Title: "more Read Requests outstanding than the IRD the DUT announced: an RDMAP Terminate",
	Transport: IWARP, Setup: iwSetup(IWConn{IRD: 1}, 0, 0),
	Steps: []Step{iwBeyondIRD, iwRDMAPTerminate, ExpectClosed, QPState(verbs.QPSErr)},
	Break: &Break{Name: "sees only the first Read Request", Stream: func() iwport.Fault {
		n := 0
		return func(u *iwport.Unit) [][]byte {
			if !u.MPA && u.Dir == iwport.In && u.Opcode() == wire.OpReadRequest {
				if n++; n > 1 {
					return nil
				}
			}
			return [][]byte{u.Bytes}
		}
	}},
}}

// iwDUTRead has the DUT post an RDMA READ of n octets from the tester's
// (made up) buffer into its own at off.
func iwDUTRead(id uint64, off uint64, n uint32) Post {
	return Post{{ID: id, Op: verbs.WRRDMARead, Local: []Seg{{MR: DefaultMR, Off: off, Len: n}}, Remote: 0xA000 + id*0x100, RKey: 0x1234}}
}

// iwExpectReadRequest wants the DUT's Read Request of WR id and keeps it.
func iwExpectReadRequest(id uint64, off uint64, n uint32) IW {
	return ExpectFPDU(fmt.Sprintf("Read Request of WR %d", id), func(s *iwSession, f *iwport.Frame) error {
		d, rr := f.Hdr.DDP, f.Hdr.ReadRequest
		_, addr := s.mr()
		switch {
		case d.Opcode != wire.OpReadRequest || d.QN != wire.QNReadRequest || d.MO != 0 || !d.Last:
			return fmt.Errorf("want a Read Request on QN 1, MO 0, L=1: %v", f)
		case rr.Size != n || rr.SourceSTag != 0x1234 || rr.SourceTO != 0xA000+id*0x100 || rr.SinkTO != addr+off:
			return fmt.Errorf("the Read Request sink %#x@%#x size %d source %#x@%#x, want sink @%#x size %d source 0x1234@%#x",
				rr.SinkSTag, rr.SinkTO, rr.Size, rr.SourceSTag, rr.SourceTO, addr+off, n, 0xA000+id*0x100)
		}
		s.lastRR = rr
		return nil
	})
}

// iwAnswerRead sends the Read Response to the DUT's last Read Request, to
// its sink STag changed by stagXor.
func iwAnswerRead(n int, stagXor uint32) IW {
	return IWSend("Read Response", func(s *iwSession) (wire.Headers, []byte) {
		rr := s.lastRR
		h := wire.Headers{DDP: wire.DDPFields{Opcode: wire.OpReadResponse, Tagged: true, Last: true, STag: rr.SinkSTag ^ stagXor, TO: rr.SinkTO}}
		return h, iwPattern(n, 13)
	}, iwport.Tx{})
}

// iwLowIRD is the default Request with IRD 1.
var iwLowIRD = func() wire.MPAFields { r := iwDefaultRequest(); r.IRDORD.IRD = 1; return r }()

var iwReadSinkCases = []Case{{
	ID: "RFC5041-7.2/read-sink-bounds", Section: "RFC 5041 §7.2, RFC 5040 §4.4", Title: "a Read Response longer than the READ's sink: Terminate DDP tagged 'base or bounds violation', the READ fails",
	Transport: IWARP, Setup: iwSetup(IWConn{}, 0, 0),
	Steps: iwSteps([]Step{iwDUTRead(1, 0, 32), iwExpectReadRequest(1, 0, 32), iwAnswerRead(64, 0)},
		iwTerminated(HdrDDP, wire.TermDDPTaggedBaseBounds), []Step{NoWCSuccess}),
	Break: iwBreak("reports an invalid STag", iwTermCode(wire.TermDDPTaggedInvalidSTag)),
}, {
	ID: "RFC5040-4.4/read-unsolicited", Section: "RFC 5040 §4.4, §4.8", Title: "a Read Response to no READ: a Terminate (RDMAP 'unexpected opcode' or DDP 'invalid STag')",
	Transport: IWARP, Setup: iwSetup(IWConn{}, 0, 0),
	Steps: iwSteps([]Step{IWSend("Read Response to nothing", func(s *iwSession) (wire.Headers, []byte) {
		k, addr := s.mr()
		return wire.Headers{DDP: wire.DDPFields{Opcode: wire.OpReadResponse, Tagged: true, Last: true, STag: k, TO: addr}}, iwPattern(16, 3)
	}, iwport.Tx{})}, iwTerminated(HdrAny, wire.TermRDMAPUnexpectedOpcode, wire.TermDDPTaggedInvalidSTag)),
	Break: iwBreak("closes without a Terminate", iwDropTerminate()),
}, {
	ID: "RFC5040-4.4/read-request", Section: "RFC 5040 §4.4", Title: "the DUT's Read Request: QN 1, MO 0, L, sink, size and source as posted; the response completes the READ",
	Transport: IWARP, Setup: iwSetup(IWConn{}, 0, 0),
	Steps: []Step{iwDUTRead(1, 512, 64), iwExpectReadRequest(1, 512, 64), iwAnswerRead(64, 0),
		Poll{Want: []WCWant{{Status: verbs.WCSuccess, ID: Is[uint64](1), Opcode: Is(verbs.WCRDMARead), Len: Is[uint32](64)}}},
		Memory{MR: DefaultMR, Off: 512, Want: iwPattern(64, 13)}},
	Break: iwBreak("asks one octet too many", iwEditFPDU(iwport.Out, wire.OpReadRequest, func(b []byte) { b[wire.DDPUntaggedLen+15]++ })),
}, {
	ID: "RFC5040-4.4/read-msn-seq", Section: "RFC 5041 §5.3, RFC 5040 §4.4", Title: "the DUT's Read Requests carry MSN 1, 2, … on queue 1",
	Transport: IWARP, Setup: iwSetup(IWConn{ORD: 2}, 0, 0),
	Steps: []Step{iwDUTRead(1, 0, 8), iwDUTRead(2, 8, 8), IW{"expect MSN 1 then 2", func(s *iwSession) error {
		for want := uint32(1); want <= 2; want++ {
			f, err := s.port.Recv(s.wait())
			if err != nil {
				return err
			}
			s.r.Note("%v", f)
			if f.Err != nil || f.Opcode() != wire.OpReadRequest || f.Hdr.DDP.MSN != want {
				return fmt.Errorf("want a Read Request with MSN %d, got %v", want, f)
			}
		}
		return nil
	}}},
	Break: iwBreak("numbers every Read Request 1", iwEditFPDU(iwport.Out, wire.OpReadRequest, func(b []byte) { b[13] = 1 })),
}, {
	ID: "RFC6581-9.1/ord", Section: "RFC 6581 §9.1, RFC 5040 §5.2", Title: "the DUT keeps no more Read Requests outstanding than the tester's IRD (1)",
	Transport: IWARP, Setup: iwSetup(IWConn{Request: &iwLowIRD, ORD: 4}, 0, 0),
	Steps: []Step{iwDUTRead(1, 0, 16), iwDUTRead(2, 16, 16), iwDUTRead(3, 32, 16),
		iwExpectReadRequest(1, 0, 16), ExpectSilence, iwAnswerRead(16, 0), iwExpectReadRequest(2, 16, 16)},
	Break: iwBreak("reads the tester's IRD as 8", iwEditMPA(iwport.In, func(b []byte) {
		if len(b) >= iwMPAORD {
			binary.BigEndian.PutUint16(b[iwMPAIRD:], binary.BigEndian.Uint16(b[iwMPAIRD:])&0xC000|8)
		}
	})),
}, {
	ID: "RFC5041-7.2/read-sink-stag", Section: "RFC 5041 §7.2, RFC 5040 §4.4", Title: "a Read Response to the wrong sink STag: Terminate DDP tagged 'invalid STag', the READ fails",
	Transport: IWARP, Setup: iwSetup(IWConn{}, 0, 0),
	Steps: iwSteps([]Step{iwDUTRead(1, 0, 32), iwExpectReadRequest(1, 0, 32), iwAnswerRead(32, 0x00FF_0000)},
		iwTerminated(HdrDDP, wire.TermDDPTaggedInvalidSTag), []Step{NoWCSuccess}),
	Break: &Break{Name: "takes any STag for its sink", Stream: iwFixSinkSTag},
}}

// iwFixSinkSTag makes the DUT take a Read Response to any STag as one to
// the sink of its Read Request.
func iwFixSinkSTag() iwport.Fault {
	var stag [4]byte
	return func(u *iwport.Unit) [][]byte {
		b := u.ULPDU()
		switch {
		case u.MPA || len(b) < wire.DDPTaggedLen:
		case u.Dir == iwport.Out && u.Opcode() == wire.OpReadRequest && len(b) >= wire.DDPUntaggedLen+4:
			copy(stag[:], b[wire.DDPUntaggedLen:])
		case u.Dir == iwport.In && u.Opcode() == wire.OpReadResponse:
			copy(b[2:6], stag[:])
		}
		return [][]byte{u.Bytes}
	}
}

func init() {
	Register(iwReadCases...)
	Register(iwReadSinkCases...)
}
