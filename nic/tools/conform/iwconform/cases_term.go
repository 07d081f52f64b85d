package iwconform

import (
	"fmt"

	"github.com/rnic/rnic/iwarp/wire"
	"github.com/rnic/rnic/nic/tools/conform/iwport"
	"github.com/rnic/rnic/nic/verbs"
)

// Terminate (RFC 5040 §4.8, §5.?) and the MPA CRC (RFC 5044 §4.4).

// terminateOf is a Terminate the tester sends: code, no headers.
func terminateOf(code wire.TermCode) Step {
	return Send(fmt.Sprintf("Terminate %#04x", uint16(code)), func(*Session) (wire.Headers, []byte) {
		f := wire.TermFields{Code: code}
		return sendHdr(wire.OpTerminate, wire.QNTerminate, 1, 0, true), wire.AppendTerminate(nil, &f)
	}, iwport.Tx{})
}

// expectFlushed checks that the receives WR 100.. are flushed.
func expectFlushed(n int) []Step {
	var s []Step
	for i := range n {
		s = append(s, ExpectWC(uint64(100+i), verbs.WCWRFlushErr, verbs.WCRecv, -1))
	}
	return s
}

func terminateCases() []Case {
	return []Case{{
		ID: "RFC5040-4.8-term-rcvd", Section: "RFC 5040 §4.8, §5.?", Title: "a Terminate from the peer: QP to ERR, posted receives flushed, stream closed",
		Setup: Setup{Recvs: 2},
		Steps: steps([]Step{terminateOf(wire.TermRDMAPCatastrophicStream), ExpectQPState(verbs.QPSErr)},
			expectFlushed(2), []Step{ExpectClosed()}),
		Break: dropFPDU(iwport.In, wire.OpTerminate),
	}, {
		ID: "RFC5040-4.8-term-header", Section: "RFC 5040 §4.8, RFC 5041 §5.3", Title: "the DUT's Terminate is an untagged message on queue 2, MSN 1, MO 0, L",
		Steps: []Step{writeAt("RDMA Write to an invalid STag", (*Session).badKey, 0, 8), Do("check the Terminate's DDP header", func(s *Session) error {
			fr, err := s.recvTerminate()
			if err != nil {
				return err
			}
			d := fr.Hdr.DDP
			if d.Tagged || d.QN != wire.QNTerminate || d.MSN != 1 || d.MO != 0 || !d.Last {
				return fmt.Errorf("Terminate T=%v QN %d MSN %d MO %d L=%v", d.Tagged, d.QN, d.MSN, d.MO, d.Last)
			}
			return nil
		})},
		Break: editFPDU(iwport.Out, wire.OpTerminate, func(b []byte) { b[13] = 0 }),
	}, {
		ID: "RFC5040-4.8-term-last", Section: "RFC 5040 §4.8", Title: "the Terminate is the last message: nothing follows it, even after more requests",
		Steps: []Step{writeAt("RDMA Write to an invalid STag", (*Session).badKey, 0, 8),
			ExpectTerminate(HdrAny), readOf("Read Request after the error", rkey, 0, 8), ExpectClosed()},
		Break: func(u *iwport.Unit) [][]byte {
			if !u.MPA && u.Dir == iwport.Out && u.Opcode() == wire.OpTerminate {
				return [][]byte{u.Bytes, append([]byte(nil), u.Bytes...)}
			}
			return [][]byte{u.Bytes}
		},
	}, {
		ID: "RFC5040-4.8-term-wr", Section: "RFC 5040 §4.8", Title: "a Terminate answering the DUT's Read Request fails the READ, nothing after it succeeds",
		Steps: []Step{
			PostSend("RDMA READ 1", func(s *Session) SendWR {
				return SendWR{ID: 1, Opcode: verbs.WRRDMARead, MR: s.MR, Len: 8, RemoteAddr: 0x1000, RKey: 0x99}
			}),
			PostSend("SEND 2", func(s *Session) SendWR { return SendWR{ID: 2, Opcode: verbs.WRSend, MR: s.MR, Len: 8} }),
			ExpectFrame("Read Request", func(_ *Session, f *iwport.Frame) error {
				if f.Opcode() != wire.OpReadRequest {
					return fmt.Errorf("want the READ's Read Request, got %v", f)
				}
				return nil
			}),
			Send("Terminate 'invalid STag' for it", func(*Session) (wire.Headers, []byte) {
				f := wire.TermFields{Code: wire.TermRDMAPInvalidSTag}
				return sendHdr(wire.OpTerminate, wire.QNTerminate, 1, 0, true), wire.AppendTerminate(nil, &f)
			}, iwport.Tx{}),
			Do("expect READ 1 failed, nothing succeeded", func(s *Session) error {
				wc, err := s.nextWC()
				if err != nil {
					return err
				}
				s.Note("WC %d %v", wc.WRID, wc.Status)
				if wc.Status == verbs.WCSuccess && wc.WRID == 1 {
					return fmt.Errorf("the READ answered with a Terminate completed successfully")
				}
				return nil
			}),
			ExpectQPState(verbs.QPSErr),
		},
		Break: dropFPDU(iwport.In, wire.OpTerminate),
	}}
}

func crcCases() []Case {
	noCRC := wire.MPAFields{Rev: wire.MPARev2, Enhanced: true, IRDORD: wire.IRDORD{IRD: 8, ORD: 8}}
	needNoCRC := Do("CRCs off", func(s *Session) error {
		if wire.MPAFrame(s.Rep).CRC() {
			return NA("the DUT asks for CRCs (C=1 in its Reply)")
		}
		return nil
	})
	return []Case{{
		ID: "RFC5044-4.4-crc-sent", Section: "RFC 5044 §4.4", Title: "with CRCs negotiated, the DUT's FPDUs carry the CRC-32C",
		Steps: []Step{PostSend("SEND 64B", func(s *Session) SendWR { return SendWR{ID: 1, Opcode: verbs.WRSend, MR: s.MR, Len: 64} }),
			ExpectFrame("Send with a valid CRC", func(_ *Session, f *iwport.Frame) error {
				if !f.CRCOK || f.CRC == 0 {
					return fmt.Errorf("CRC field %#08x does not match (frame %d)", f.CRC, f.Frame)
				}
				return nil
			})},
		Break: func(u *iwport.Unit) [][]byte {
			if !u.MPA && u.Dir == iwport.Out {
				copy(u.Bytes[len(u.Bytes)-4:], []byte{0, 0, 0, 0})
			}
			return [][]byte{u.Bytes}
		},
	}, {
		ID: "RFC5044-4.4-crc-error", Section: "RFC 5044 §4.4, §8", Title: "an FPDU with a bad CRC: Terminate LLP 'MPA CRC error' (or close), the Send is not delivered",
		Setup: Setup{Recvs: 1},
		Steps: []Step{Send("Send with a bad CRC", func(s *Session) (wire.Headers, []byte) { return s.send(wire.OpSend), pattern(32, 1) }, iwport.Tx{BadCRC: true}),
			Do("expect Terminate 0x2002 or the stream closed", func(s *Session) error {
				fr, err := s.Port.Recv(s.wait())
				if err == nil {
					s.Note("got %v", fr)
					if fr.Term == nil || fr.Term.Code != wire.TermLLPCRC {
						return fmt.Errorf("want Terminate %#04x, got %v", uint16(wire.TermLLPCRC), fr)
					}
					return nil
				}
				if _, cerr := s.Port.Closed(0); cerr == nil {
					s.Note("stream closed")
					return nil
				}
				return fmt.Errorf("neither a Terminate nor a close: %w", err)
			}),
			ExpectNoWCSuccess()},
		Break: func(u *iwport.Unit) [][]byte {
			if !u.MPA && u.Dir == iwport.In {
				iwport.FixCRC(u.Bytes)
			}
			return [][]byte{u.Bytes}
		},
	}, {
		ID: "RFC5044-4.4-crc-off-zero", Section: "RFC 5044 §4.1, §4.4", Title: "without CRCs the DUT sends the CRC field as zero",
		Setup: Setup{Request: &noCRC},
		Steps: []Step{needNoCRC, PostSend("SEND 16B", func(s *Session) SendWR { return SendWR{ID: 1, Opcode: verbs.WRSend, MR: s.MR, Len: 16} }),
			ExpectFrame("Send with a zero CRC field", func(_ *Session, f *iwport.Frame) error {
				if f.CRC != 0 {
					return fmt.Errorf("CRC field %#08x with CRCs off", f.CRC)
				}
				return nil
			})},
		Deviations: map[string]string{},
		Break: func(u *iwport.Unit) [][]byte {
			if !u.MPA && u.Dir == iwport.Out {
				copy(u.Bytes[len(u.Bytes)-4:], []byte{0xDE, 0xAD, 0xBE, 0xEF})
			}
			return [][]byte{u.Bytes}
		},
	}, {
		ID: "RFC5044-4.4-crc-off-ignored", Section: "RFC 5044 §4.4", Title: "without CRCs the DUT ignores the CRC field",
		Setup: Setup{Request: &noCRC, Recvs: 1},
		Steps: []Step{needNoCRC,
			Send("Send with a garbage CRC field", func(s *Session) (wire.Headers, []byte) { return s.send(wire.OpSend), pattern(24, 2) }, iwport.Tx{BadCRC: true}),
			ExpectWC(100, verbs.WCSuccess, verbs.WCRecv, 24), ExpectQPState(verbs.QPSRTS)},
		Break: dropFPDU(iwport.In, wire.OpSend),
	}}
}
