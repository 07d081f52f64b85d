package iwconform

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/rnic/rnic/iwarp/wire"
	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/tools/conform/iwport"
	"github.com/rnic/rnic/nic/verbs"
)

// RDMAP, RFC 5040: RDMA Read (§4.4, §5.2) at the data source and sink,
// the IRD and ORD limits, and Terminate (§4.8, §5.? error handling).

// sinkSTag is the tester's (made up) Data Sink STag.
const sinkSTag, sinkTO = 0x7E57_0001, 0x10_0000

// readOf sends a Read Request for n octets at the DUT MR's offset off
// under stag.
func readOf(name string, stag func(s *Session) uint32, off uint64, n uint32) Step {
	return Send(name, func(s *Session) (wire.Headers, []byte) {
		return s.readReqHdr(sinkSTag, sinkTO, n, stag(s), s.MR.Addr+off), nil
	}, iwport.Tx{})
}

// readResponse checks a Read Response: tagged to the tester's sink, L,
// and the octets of the DUT's buffer at off.
func readResponse(off, n int) Step {
	return ExpectFrame("Read Response", func(s *Session, f *iwport.Frame) error {
		d := f.Hdr.DDP
		if d.Opcode != wire.OpReadResponse || d.STag != sinkSTag || d.TO != sinkTO || !d.Last {
			return fmt.Errorf("want one Read Response to STag %#x TO %#x with L=1, got %v", sinkSTag, sinkTO, f)
		}
		want := pattern(n, 11)
		if p := f.Seg.Payload(); !bytes.Equal(p, want) {
			return fmt.Errorf("Read Response payload % x, want % x", clip(p), clip(want))
		}
		return nil
	})
}

func readCases() []Case {
	return []Case{{
		ID: "RFC5040-4.4-read", Section: "RFC 5040 §4.4, §5.2", Title: "a Read Request is answered with a Read Response to the sink STag and TO",
		Steps: []Step{WriteMem(64, pattern(100, 11)), readOf("Read Request 100B", rkey, 64, 100), readResponse(64, 100)},
		Break: editFPDU(iwport.Out, wire.OpReadResponse, func(b []byte) { b[len(b)-1] ^= 0xFF }),
	}, {
		ID: "RFC5040-4.8-read-stag", Section: "RFC 5040 §4.8, §5.2", Title: "Read Request with an invalid source STag: Terminate RDMAP 'invalid STag' with the DDP and RDMAP headers",
		Steps: steps([]Step{readOf("Read Request, invalid source STag", (*Session).badKey, 0, 32)},
			terminated(HdrDDPRDMA, wire.TermRDMAPInvalidSTag)),
		Break: termNoHeaders(),
	}, {
		ID: "RFC5040-4.8-read-bounds", Section: "RFC 5040 §4.8, §5.2", Title: "Read Request past the source's end: Terminate RDMAP 'base or bounds violation'",
		Steps: steps([]Step{readOf("Read Request across the end", rkey, MRSize-8, 64)},
			terminated(HdrDDPRDMA, wire.TermRDMAPBaseBounds)),
		Break: termCode(wire.TermRDMAPInvalidSTag),
	}, {
		ID: "RFC5040-4.8-read-access", Section: "RFC 5040 §4.8, §5.2", Title: "Read Request of a buffer without remote read access: Terminate RDMAP 'access rights violation'",
		Setup: Setup{Access: memory.LocalWrite | memory.RemoteWrite},
		Steps: steps([]Step{readOf("Read Request of a write-only buffer", rkey, 0, 32)},
			terminated(HdrDDPRDMA, wire.TermRDMAPAccessRights)),
		Break: termCode(wire.TermRDMAPInvalidSTag),
	}, {
		ID: "RFC5040-4.4-read-msn", Section: "RFC 5041 §5.3, RFC 5040 §4.4", Title: "a Read Request with the wrong MSN on queue 1: Terminate DDP untagged 'MSN range'",
		Steps: steps([]Step{Send("Read Request with MSN 7", func(s *Session) (wire.Headers, []byte) {
			h := s.readReqHdr(sinkSTag, sinkTO, 8, s.MR.RKey, s.MR.Addr)
			h.DDP.MSN = 7
			return h, nil
		}, iwport.Tx{})}, terminated(HdrDDP, wire.TermDDPUntaggedMSNRange)),
		Break: termCode(wire.TermDDPUntaggedInvalidMO),
	}, {
		ID: "RFC5040-6.1-ird", Section: "RFC 5040 §5.2, RFC 6581 §9.1", Title: "more Read Requests outstanding than the IRD the DUT announced: Terminate (RDMAP)",
		Setup: Setup{IRD: 1},
		Steps: steps([]Step{Do("send 2 Read Requests at once", func(s *Session) error {
			var b []byte
			for i := range 2 {
				h := s.readReqHdr(sinkSTag, sinkTO+uint64(i)*2048, 2048, s.MR.RKey, s.MR.Addr)
				b = wire.AppendFPDU(b, s.Port.Framing(), 0, wire.AppendSegment(nil, &h, nil), nil)
			}
			frame, err := s.Port.SendRaw(b)
			s.Note("sent 2 Read Requests in one segment (frame %d), DUT IRD %d", frame, wire.MPAFrame(s.Rep).IRDORD().IRD)
			return err
		}), Do("expect a Terminate of the RDMAP layer", func(s *Session) error {
			fr, err := s.recvTerminate()
			if err != nil {
				return err
			}
			if fr.Term.Code.Layer() != wire.LayerRDMAP {
				return fmt.Errorf("Terminate %v, want an RDMAP error", fr.Term.Code)
			}
			return nil
		})}, []Step{ExpectClosed(), ExpectQPState(verbs.QPSErr)}),
		Break: func() iwport.Fault {
			n := 0
			return func(u *iwport.Unit) [][]byte {
				if !u.MPA && u.Dir == iwport.In && u.Opcode() == wire.OpReadRequest {
					if n++; n > 1 {
						return nil
					}
				}
				return [][]byte{u.Bytes}
			}
		}(),
	}}
}

// dutRead posts an RDMA READ of n octets from the tester's (made up)
// buffer into the DUT MR at off.
func dutRead(id uint64, off, n int) Step {
	return PostSend(fmt.Sprintf("RDMA READ %d", id), func(s *Session) SendWR {
		return SendWR{ID: id, Opcode: verbs.WRRDMARead, MR: s.MR, Off: off, Len: n, RemoteAddr: 0xA000 + uint64(id)*0x100, RKey: 0x1234}
	})
}

// readRequestFrom expects the DUT's Read Request for WR id and answers it
// unless answer is nil, keeping it in s.
func expectReadRequest(id uint64, off, n int) Step {
	return ExpectFrame(fmt.Sprintf("Read Request of WR %d", id), func(s *Session, f *iwport.Frame) error {
		d, rr := f.Hdr.DDP, f.Hdr.ReadRequest
		switch {
		case d.Opcode != wire.OpReadRequest || d.QN != wire.QNReadRequest || d.MO != 0 || !d.Last:
			return fmt.Errorf("want a Read Request on QN 1, MO 0, L=1: %v", f)
		case rr.Size != uint32(n) || rr.SourceSTag != 0x1234 || rr.SourceTO != 0xA000+id*0x100 || rr.SinkTO != s.MR.Addr+uint64(off):
			return fmt.Errorf("Read Request sink %#x@%#x size %d source %#x@%#x, want sink @%#x size %d source 0x1234@%#x",
				rr.SinkSTag, rr.SinkTO, rr.Size, rr.SourceSTag, rr.SourceTO, s.MR.Addr+uint64(off), n, 0xA000+id*0x100)
		}
		s.lastRR = rr
		return nil
	})
}

// answerRead sends the Read Response to the last Read Request, with the
// sink STag changed by stagXor.
func answerRead(n int, stagXor uint32) Step {
	return Send("Read Response", func(s *Session) (wire.Headers, []byte) {
		rr := s.lastRR
		h := wire.Headers{DDP: wire.DDPFields{Opcode: wire.OpReadResponse, Tagged: true, Last: true, STag: rr.SinkSTag ^ stagXor, TO: rr.SinkTO}}
		return h, pattern(n, 13)
	}, iwport.Tx{})
}

func readSinkCases() []Case {
	return []Case{{
		ID: "RFC5040-4.4-read-request", Section: "RFC 5040 §4.4", Title: "the DUT's Read Request: QN 1, MO 0, L, sink, size and source as posted; the response completes the READ",
		Steps: []Step{dutRead(1, 512, 64), expectReadRequest(1, 512, 64), answerRead(64, 0),
			ExpectWC(1, verbs.WCSuccess, verbs.WCRDMARead, 64), ExpectMem(512, func(*Session) []byte { return pattern(64, 13) })},
		Break: editFPDU(iwport.Out, wire.OpReadRequest, func(b []byte) { b[wire.DDPUntaggedLen+15]++ }),
	}, {
		ID: "RFC5040-4.4-read-msn-seq", Section: "RFC 5041 §5.3, RFC 5040 §4.4", Title: "the DUT's Read Requests carry MSN 1, 2, ... on queue 1",
		Setup: Setup{ORD: 2},
		Steps: []Step{dutRead(1, 0, 8), dutRead(2, 8, 8), Do("expect MSN 1 then 2", func(s *Session) error {
			for want := uint32(1); want <= 2; want++ {
				f, err := s.Port.Recv(s.wait())
				if err != nil {
					return err
				}
				s.Note("got %v", f)
				if f.Err != nil || f.Opcode() != wire.OpReadRequest || f.Hdr.DDP.MSN != want {
					return fmt.Errorf("want a Read Request with MSN %d, got %v", want, f)
				}
			}
			return nil
		})},
		Break: editFPDU(iwport.Out, wire.OpReadRequest, func(b []byte) { b[13] = 1 }),
	}, {
		ID: "RFC6581-9.1-ord", Section: "RFC 6581 §9.1, RFC 5040 §5.2", Title: "the DUT keeps no more Read Requests outstanding than the tester's IRD (1)",
		Setup: Setup{Request: func() *wire.MPAFields { r := DefaultRequest(); r.IRDORD.IRD = 1; return &r }(), ORD: 4},
		Steps: []Step{dutRead(1, 0, 16), dutRead(2, 16, 16), dutRead(3, 32, 16),
			expectReadRequest(1, 0, 16), ExpectSilence(), answerRead(16, 0), expectReadRequest(2, 16, 16)},
		Break: editMPA(iwport.In, func(b []byte) {
			if len(b) >= wire.MPAHeaderLen+4 {
				binary.BigEndian.PutUint16(b[wire.MPAHeaderLen:], binary.BigEndian.Uint16(b[wire.MPAHeaderLen:])&0xC000|8)
			}
		}),
	}, {
		ID: "RFC5041-7.2-read-sink-stag", Section: "RFC 5041 §7.2, RFC 5040 §4.4", Title: "a Read Response to the wrong sink STag: Terminate DDP tagged 'invalid STag', the READ fails",
		Steps: steps([]Step{dutRead(1, 0, 32), expectReadRequest(1, 0, 32), answerRead(32, 0x00FF_0000)},
			terminated(HdrDDP, wire.TermDDPTaggedInvalidSTag), []Step{ExpectNoWCSuccess()}),
		Break: fixSinkSTag(),
	}}
}

// fixSinkSTag makes the NIC take a Read Response to any STag as one to
// the sink of its Read Request.
func fixSinkSTag() iwport.Fault {
	var stag [4]byte
	return func(u *iwport.Unit) [][]byte {
		b := u.ULPDU()
		switch {
		case u.MPA || len(b) < wire.DDPUntaggedLen:
		case u.Dir == iwport.Out && u.Opcode() == wire.OpReadRequest:
			copy(stag[:], b[wire.DDPUntaggedLen:])
		case u.Dir == iwport.In && u.Opcode() == wire.OpReadResponse:
			copy(b[2:6], stag[:])
		}
		return [][]byte{u.Bytes}
	}
}
