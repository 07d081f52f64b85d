// iWARP cases: Terminate (RFC 5040 §4.8) received and sent, and the MPA
// CRC (RFC 5044 §4.4).

package conform

import (
	"encoding/binary"
	"fmt"

	"github.com/rnic/rnic/cmd/internal/conform/iwport"
	"github.com/rnic/rnic/iwarp/wire"
	"github.com/rnic/rnic/nic/verbs"
)

// iwTerminateOf sends a Terminate with code and no headers.
func iwTerminateOf(code wire.TermCode) IW {
	return IWSend(fmt.Sprintf("Terminate %#04x", uint16(code)), func(*iwSession) (wire.Headers, []byte) {
		f := wire.TermFields{Code: code}
		return iwSendHdr(wire.OpTerminate, wire.QNTerminate, 1, 0, true), wire.AppendTerminate(nil, &f)
	}, iwport.Tx{})
}

// iwFlushed wants n receives (wr_ids 1…n) flushed.
func iwFlushed(n int) Poll {
	p := Poll{}
	for i := range n {
		p.Want = append(p.Want, WCWant{Status: verbs.WCWRFlushErr, ID: Is(uint64(i + 1))})
	}
	return p
}

// iwBadWrite provokes a Terminate: an RDMA Write to an invalid STag.
var iwBadWrite = iwWriteAt("RDMA Write to an invalid STag", (*iwSession).badKey, 0, 8)

var iwTerminateCases = []Case{{
	ID: "RFC5040-4.8/term-rcvd", Section: "RFC 5040 §4.8", Title: "a Terminate from the peer: the stream closed, the QP in ERR, posted receives flushed",
	Transport: IWARP, Setup: iwSetup(IWConn{}, 0, 2),
	Steps: []Step{iwTerminateOf(wire.TermRDMAPCatastrophicStream), ExpectClosed, QPState(verbs.QPSErr), iwFlushed(2)},
	Break: iwBreak("ignores Terminates", iwDropFPDU(iwport.In, wire.OpTerminate)),
}, {
	ID: "RFC5040-4.8/term-header", Section: "RFC 5040 §4.8, RFC 5041 §5.3", Title: "the DUT's Terminate is untagged on queue 2, MSN 1, MO 0, L",
	Transport: IWARP, Setup: iwSetup(IWConn{}, 0, 0),
	Steps: []Step{iwBadWrite, IW{"check the Terminate's DDP header", func(s *iwSession) error {
		fr, err := s.recvTerminate()
		if err != nil {
			return err
		}
		return s.judgeTerminate(fr, func(fr *iwport.Frame) error {
			if d := fr.Hdr.DDP; d.Tagged || d.QN != wire.QNTerminate || d.MSN != 1 || d.MO != 0 || !d.Last {
				return fmt.Errorf("the Terminate T=%v QN %d MSN %d MO %d L=%v", d.Tagged, d.QN, d.MSN, d.MO, d.Last)
			}
			return nil
		})
	}}},
	Break: iwBreak("numbers its Terminate MSN 0", iwEditFPDU(iwport.Out, wire.OpTerminate, func(b []byte) { b[13] = 0 })),
}, {
	ID: "RFC5040-4.8/term-control", Section: "RFC 5040 §4.8", Title: "the Terminate Control is laid out as the RFC draws it: Layer then EType, M/D/R in the top bits, reserved bits zero",
	Transport: IWARP, Setup: iwSetup(IWConn{}, 0, 0),
	Steps: []Step{iwBadWrite, IW{"check the Terminate Control's layout", func(s *iwSession) error {
		fr, err := s.recvTerminate()
		if err != nil {
			return err
		}
		return s.checkTermControl(fr)
	}}},
	Break: iwBreak("lays its Terminate Control out as a little-endian bitfield", iwTermAsLE()),
}, {
	ID: "RFC5040-4.8/term-seglen", Section: "RFC 5040 §4.8", Title: "the Terminate's DDP Segment Length is the offending segment's length (M set)",
	Transport: IWARP, Setup: iwSetup(IWConn{}, 0, 0),
	Steps: []Step{iwWriteAt("RDMA Write to an invalid STag", (*iwSession).badKey, 0, 40), IW{"check the DDP Segment Length", func(s *iwSession) error {
		fr, err := s.recvTerminate()
		if err != nil {
			return err
		}
		return s.judgeTerminate(fr, func(fr *iwport.Frame) error {
			t, n := fr.Term, len(s.lastSent.ULPDU)
			if !t.M || !t.D || int(t.DDPSegLen) != n {
				return fmt.Errorf("the Terminate has M=%v D=%v DDP Segment Length %d, want M=1 D=1 and %d (the segment #%d→)", t.M, t.D, t.DDPSegLen, n, s.lastSent.Frame)
			}
			return nil
		})
	}}},
	Deviations: []Deviation{{Kind: "siw", Ref: "iwarp/wire/terminate.go (Terminate)", Note: "siw sends the payload length, not the segment's"}},
	Break: iwBreak("sends the payload length", iwEditFPDU(iwport.Out, wire.OpTerminate, func(b []byte) {
		if len(b) >= wire.DDPUntaggedLen+wire.TermControlLen+2 {
			at := b[wire.DDPUntaggedLen+wire.TermControlLen:]
			binary.BigEndian.PutUint16(at, binary.BigEndian.Uint16(at)-wire.DDPTaggedLen)
		}
	})),
}, {
	ID: "RFC5040-4.8/term-last", Section: "RFC 5040 §4.8", Title: "the Terminate is the last message: nothing follows it, even after more requests",
	Transport: IWARP, Setup: iwSetup(IWConn{}, 0, 0),
	Steps: []Step{iwBadWrite, ExpectTerminate(HdrAny), iwReadOf("Read Request after the error", iwRKeyOf, 0, 8), ExpectClosed},
	Break: iwBreak("sends its Terminate twice", func(u *iwport.Unit) [][]byte {
		if !u.MPA && u.Dir == iwport.Out && u.Opcode() == wire.OpTerminate {
			return [][]byte{u.Bytes, append([]byte(nil), u.Bytes...)}
		}
		return [][]byte{u.Bytes}
	}),
}, {
	ID: "RFC5040-4.8/term-read", Section: "RFC 5040 §4.8", Title: "a Terminate answering the DUT's Read Request fails the READ; nothing behind it succeeds",
	Transport: IWARP, Setup: iwSetup(IWConn{}, 0, 0),
	Steps: []Step{iwDUTRead(1, 0, 8), Post{{ID: 2, Op: verbs.WRSend, Local: []Seg{{MR: DefaultMR, Len: 8}}}},
		ExpectFPDU("Read Request", func(_ *iwSession, f *iwport.Frame) error {
			if f.Opcode() != wire.OpReadRequest {
				return fmt.Errorf("want the READ's Read Request, got %v", f)
			}
			return nil
		}),
		iwTerminateOf(wire.TermRDMAPInvalidSTag),
		Func{"the READ completes in error", func(r *Run) error {
			wcs, err := r.Agent.PollCQ(r.CQ, 1, r.Bound(DefaultWithin))
			if err != nil {
				return err
			}
			if len(wcs) == 0 {
				return fmt.Errorf("no completion of the READ")
			}
			r.Note("wc %d %s", wcs[0].ID, wcs[0].StatusName)
			if wcs[0].ID != 1 || verbs.WCStatus(wcs[0].Status) == verbs.WCSuccess {
				return fmt.Errorf("first completion wr_id %d %s, want the READ (1) in error", wcs[0].ID, wcs[0].StatusName)
			}
			return nil
		}},
		NoWCSuccess, QPState(verbs.QPSErr)},
	Break: iwBreak("ignores Terminates", iwDropFPDU(iwport.In, wire.OpTerminate)),
}}

// iwCRCOff is a Request without C.
var iwCRCOff = wire.MPAFields{Rev: wire.MPARev2, Enhanced: true, IRDORD: wire.IRDORD{IRD: 8, ORD: 8}}

// iwNeedNoCRC makes a case not-applicable on a DUT that insists on CRCs.
var iwNeedNoCRC = IW{"CRCs off", func(s *iwSession) error {
	if s.rep.CRC() {
		return fmt.Errorf("%w: the DUT asks for CRCs (C=1 in its Reply)", ErrNotApplicable)
	}
	return nil
}}

// iwFixedCRC makes the DUT's FPDUs carry crc in the CRC field.
func iwFixedCRC(crc [4]byte) iwport.Fault {
	return func(u *iwport.Unit) [][]byte {
		if !u.MPA && u.Dir == iwport.Out {
			copy(u.Bytes[len(u.Bytes)-4:], crc[:])
		}
		return [][]byte{u.Bytes}
	}
}

func iwSendWR(n uint32) Post {
	return Post{{ID: 1, Op: verbs.WRSend, Local: []Seg{{MR: DefaultMR, Len: n}}}}
}

var iwCRCCases = []Case{{
	ID: "RFC5044-4.1/pad-zero", Section: "RFC 5044 §4.1", Title: "the DUT's FPDU pad octets are zero",
	Transport: IWARP, Setup: iwSetup(IWConn{}, 0, 0),
	Steps: []Step{iwSendWR(17), ExpectFPDU("Send with a 3-octet pad", func(_ *iwSession, f *iwport.Frame) error {
		if len(f.Pad) != 3 || f.Pad[0]|f.Pad[1]|f.Pad[2] != 0 {
			return fmt.Errorf("pad % x after a %d-octet ULPDU, want 3 zero octets", f.Pad, len(f.ULPDU))
		}
		return nil
	})},
	Deviations: []Deviation{{Kind: "siw", Ref: "iwarp/wire/fpdu.go (FPDU pad)", Note: "siw sends whatever its buffer held in the pad"}},
	Break: iwBreak("leaks octets into the pad", func(u *iwport.Unit) [][]byte {
		if n := len(u.ULPDU()); !u.MPA && u.Dir == iwport.Out && n > 0 {
			for i := wire.LengthFieldLen + n; i < len(u.Bytes)-wire.CRCLen; i++ {
				u.Bytes[i] = 0xA5
			}
		}
		return [][]byte{u.Bytes}
	}),
}, {
	ID: "RFC5044-4.4/crc-sent", Section: "RFC 5044 §4.4", Title: "with CRCs negotiated, the DUT's FPDUs carry the CRC-32C",
	Transport: IWARP, Setup: iwSetup(IWConn{}, 0, 0),
	Steps: []Step{iwSendWR(64), ExpectFPDU("Send with a valid CRC", func(_ *iwSession, f *iwport.Frame) error {
		if !f.CRCOK || f.CRC == 0 {
			return fmt.Errorf("CRC field %#08x does not match (#%d←)", f.CRC, f.Frame)
		}
		return nil
	})},
	Break: iwBreak("sends a zero CRC", iwFixedCRC([4]byte{})),
}, {
	ID: "RFC5044-4.4/crc-error", Section: "RFC 5044 §4.4, §8", Title: "an FPDU with a bad CRC: Terminate LLP 'MPA CRC error' (or a close); the Send is not delivered",
	Transport: IWARP, Setup: iwSetup(IWConn{}, 0, 1),
	Steps: []Step{IWSend("Send with a bad CRC", func(s *iwSession) (wire.Headers, []byte) { return s.send(wire.OpSend), iwPattern(32, 1) }, iwport.Tx{BadCRC: true}),
		IW{"expect Terminate 0x2002 or the stream closed", func(s *iwSession) error {
			fr, err := s.port.Recv(s.wait())
			if err == nil {
				s.r.Note("%v", fr)
				if fr.Opcode() != wire.OpTerminate {
					return fmt.Errorf("want Terminate %#04x, got %v", uint16(wire.TermLLPCRC), fr)
				}
				return s.judgeTerminate(fr, func(fr *iwport.Frame) error {
					if fr.Term.Code != wire.TermLLPCRC {
						return fmt.Errorf("want Terminate %#04x, got %v", uint16(wire.TermLLPCRC), fr)
					}
					return nil
				})
			}
			if _, cerr := s.port.Closed(0); cerr == nil {
				s.r.Note("stream closed")
				return nil
			}
			return fmt.Errorf("neither a Terminate nor a close: %w", err)
		}},
		NoWCSuccess},
	Break: iwBreak("does not check CRCs", func(u *iwport.Unit) [][]byte {
		if !u.MPA && u.Dir == iwport.In {
			iwport.FixCRC(u.Bytes)
		}
		return [][]byte{u.Bytes}
	}),
}, {
	ID: "RFC5044-4.4/crc-off-ignored", Section: "RFC 5044 §4.1, §4.4", Title: "without CRCs the DUT ignores the CRC field",
	Transport: IWARP, Setup: iwSetup(IWConn{Request: &iwCRCOff}, 0, 1),
	Steps: []Step{iwNeedNoCRC,
		IWSend("Send with a garbage CRC field", func(s *iwSession) (wire.Headers, []byte) { return s.send(wire.OpSend), iwPattern(24, 2) }, iwport.Tx{BadCRC: true}),
		Poll{Want: []WCWant{{Status: verbs.WCSuccess, ID: Is[uint64](1), Opcode: Is(verbs.WCRecv), Len: Is[uint32](24)}}},
		QPState(verbs.QPSRTS)},
	Break: iwBreak("drops FPDUs with a CRC field set", iwDropFPDU(iwport.In, wire.OpSend)),
}}

// checkTermControl wants the Terminate to decode as RFC 5040 §4.8 lays it
// out, with a defined code and the reserved bits zero; if it does not
// and the little-endian bitfield layout explains it, the error says so
// with the bytes, and the case records the finding.
func (s *iwSession) checkTermControl(fr *iwport.Frame) error {
	strict := fr.Err == nil && fr.Term != nil && fr.Term.Reserved == 0 && fr.Term.Code.Known()
	if strict {
		return nil
	}
	if alt, ok := termAsLE(fr); ok && alt.Term.Reserved == 0 && alt.Term.Code.Known() {
		f := termLayoutFinding(fr, alt, strictReading(fr))
		s.r.Find(f)
		return fmt.Errorf("the Terminate Control is laid out as a little-endian bitfield: %s", f.Evidence)
	}
	return fmt.Errorf("the Terminate (#%d←) reads as %s", fr.Frame, strictReading(fr))
}

func init() {
	Register(iwTerminateCases...)
	Register(iwCRCCases...)
}
