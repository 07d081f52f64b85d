// iWARP cases: MPA connection setup, RFC 5044 §7.1 and RFC 6581 §9.

package conform

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/rnic/rnic/cmd/internal/conform/iwport"
	"github.com/rnic/rnic/iwarp/wire"
	"github.com/rnic/rnic/nic/verbs"
)

// CheckReply checks the DUT's MPA Reply.
func CheckReply(what string, check func(rep wire.MPAFields) error) IW {
	return IW{"check the Reply's " + what, func(s *iwSession) error { return check(s.rep.Fields()) }}
}

// CheckRequest checks the DUT's MPA Request.
func CheckRequest(what string, check func(req wire.MPAFields) error) IW {
	return IW{"check the Request's " + what, func(s *iwSession) error { return check(s.req.Fields()) }}
}

// SendRequest sends an MPA Request (a manual case's first step).
func SendRequest(f wire.MPAFields) IW {
	return IW{"send MPA Request", func(s *iwSession) error {
		frame, err := s.sendRequest(&f)
		s.r.Note("#%d→ MPA Request rev %d M=%v C=%v S=%v PD %dB", frame, f.Rev, f.Markers, f.CRC, f.Enhanced, len(f.PrivateData))
		return err
	}}
}

// ExpectRefused wants the DUT not to accept the connection: an MPA Reply
// with R set, or the stream closed without a Reply (RFC 5044 §7.1.1
// allows either); and the DUT's rdma_cm must not establish it.
var ExpectRefused = IW{"expect the connection refused", func(s *iwSession) error {
	m, err := s.port.RecvMPA(s.wait())
	switch {
	case err == nil && m.Reject:
		s.r.Note("#%d← %s", m.Frame, iwMPAString(m))
	case err == nil:
		return fmt.Errorf("the DUT accepted: MPA Reply R=0 (#%d←)", m.Frame)
	case errors.Is(err, iwport.ErrClosed):
		s.r.Note("stream closed without a Reply")
	default:
		return fmt.Errorf("neither a reject nor a close: %w", err)
	}
	select {
	case res := <-s.accepted:
		if res.err == nil {
			return errors.New("the DUT's rdma_cm established the connection")
		}
	default:
	}
	return nil
}}

// iwRev1 is an MPA Rev 1 Request.
var iwRev1 = wire.MPAFields{CRC: true, Rev: wire.MPARev1}

var iwMPACases = []Case{{
	ID: "RFC5044-7.1.1/reply", Section: "RFC 5044 §7.1.1", Title: "MPA Reply: the Reply key, R=0 on accept, reserved bits zero",
	Transport: IWARP, Setup: iwSetup(IWConn{}, 0, 0),
	Steps: []Step{CheckReply("key and flags", func(r wire.MPAFields) error {
		if !r.Reply || r.Reject || r.Reserved != 0 {
			return fmt.Errorf("the Reply key=%v R=%v Res=%#x", r.Reply, r.Reject, r.Reserved)
		}
		return nil
	})},
	Break: iwBreak("sets a reserved bit in its Reply", iwEditMPA(iwport.Out, func(b []byte) { b[16] |= 0x01 })),
}, {
	ID: "RFC5044-7.1.1/request", Section: "RFC 5044 §7.1.1", Title: "MPA Request: the Request key, revision 1 or 2, R=0, reserved bits zero",
	Transport: IWARP, Setup: iwSetup(IWConn{DUTConnects: true}, 0, 0),
	Steps: []Step{CheckRequest("key and flags", func(r wire.MPAFields) error {
		if r.Reply || r.Reject || r.Reserved != 0 || r.Rev < wire.MPARev1 || r.Rev > wire.MPARev2 {
			return fmt.Errorf("the Request key=%v R=%v Res=%#x Rev=%d", !r.Reply, r.Reject, r.Reserved, r.Rev)
		}
		return nil
	})},
	Break: iwBreak("sets a reserved bit in its Request", iwEditMPA(iwport.Out, func(b []byte) { b[16] |= 0x02 })),
}, {
	ID: "RFC5044-7.1.1/rev1", Section: "RFC 5044 §7.1.1, RFC 6581 §9", Title: "a Rev 1 Request gets a Rev 1 Reply without S",
	Transport: IWARP, Setup: iwSetup(IWConn{Request: &iwRev1}, 0, 0),
	Steps: []Step{CheckReply("revision", func(r wire.MPAFields) error {
		if r.Rev != wire.MPARev1 || r.Enhanced {
			return fmt.Errorf("the Reply Rev %d S=%v to a Rev 1 Request", r.Rev, r.Enhanced)
		}
		return nil
	})},
	Break: iwBreak("answers Rev 2 to Rev 1", iwEditMPA(iwport.Out, func(b []byte) { b[17] = wire.MPARev2 })),
}, {
	ID: "RFC5044-7.1.1/rev-unknown", Section: "RFC 5044 §7.1.1", Title: "a Request of an unknown revision (3) is refused",
	Transport: IWARP, Setup: iwSetup(IWConn{Manual: true}, 0, 0),
	Steps: []Step{SendRequest(wire.MPAFields{CRC: true, Rev: 3}), ExpectRefused},
	Break: iwBreak("takes Rev 3 for Rev 1", iwEditMPA(iwport.In, func(b []byte) { b[17] = wire.MPARev1 })),
}, {
	ID: "RFC5044-7.1.1/pd-512", Section: "RFC 5044 §7.1.1", Title: "512 octets of private data reach the ULP intact",
	Transport: IWARP, Setup: iwSetup(IWConn{Request: &wire.MPAFields{CRC: true, Rev: wire.MPARev1, PrivateData: iwPattern(512, 3)}}, 0, 0),
	Steps: []Step{IW{"check the private data the DUT's ULP got", func(s *iwSession) error {
		res := <-s.accepted
		if !bytes.Equal(res.info.PrivateData, iwPattern(512, 3)) {
			return fmt.Errorf("the DUT's ULP got %d octets of private data that differ from the 512 sent", len(res.info.PrivateData))
		}
		s.r.Note("the ULP got 512 octets")
		return nil
	}}},
	Deviations: []Deviation{{Kind: "siw", Ref: "cmd/internal/conform/README.md: siw private data", Note: "private data ≤ RDMA_MAX_PRIVATE_DATA (256)"}},
	Break:      iwBreak("corrupts private data", iwEditMPA(iwport.In, func(b []byte) { b[len(b)-1] ^= 0xFF })),
}, {
	ID: "RFC5044-7.1.1/pd-513", Section: "RFC 5044 §7.1.1", Title: "a PD_Length above 512 is refused",
	Transport: IWARP, Setup: iwSetup(IWConn{Manual: true}, 0, 0),
	Steps: []Step{SendRequest(wire.MPAFields{CRC: true, Rev: wire.MPARev1, PrivateData: iwPattern(513, 1)}), ExpectRefused},
	Break: iwBreak("accepts 513 octets of private data", iwEditMPA(iwport.In, func(b []byte) {
		binary.BigEndian.PutUint16(b[18:], 512)
	})),
}, {
	ID: "RFC5044-7.1.1/crc-reply", Section: "RFC 5044 §7.1.1", Title: "a Request with C=1 gets a Reply with C=1",
	Transport: IWARP, Setup: iwSetup(IWConn{}, 0, 0),
	Steps: []Step{CheckReply("C bit", func(r wire.MPAFields) error {
		if !r.CRC {
			return errors.New("the Reply C=0 to a Request with C=1")
		}
		return nil
	})},
	Break: iwBreak("clears C in its Reply", iwEditMPA(iwport.Out, func(b []byte) { b[16] &^= wire.MPAFlagCRC })),
}, iwMarkersCase()}

// iwMarkersCase: RFC 5044 §7.1.1 M and §4.3: a DUT refuses markers (a Reply
// with R=1, as siw does) or inserts them where §4.3 puts them.
func iwMarkersCase() Case {
	req := iwDefaultRequest()
	req.Markers = true
	return Case{
		ID: "RFC5044-4.3/markers", Section: "RFC 5044 §4.3, §7.1.1", Title: "markers asked for are refused, or sent every 512 octets",
		Transport: IWARP, Setup: iwSetup(IWConn{Manual: true}, 0, 0),
		Steps: []Step{SendRequest(req), IW{"markers refused, or honoured", func(s *iwSession) error {
			m, err := s.port.RecvMPA(s.wait())
			if err != nil {
				return fmt.Errorf("no MPA Reply: %w", err)
			}
			if m.Reject {
				s.r.Note("#%d← markers refused: Reply R=1", m.Frame)
				return nil
			}
			s.rep = m.Raw
			s.startFPDUs()
			if err := s.established(); err != nil {
				return err
			}
			wr := Post{{ID: 1, Op: verbs.WRSend, Local: []Seg{{MR: DefaultMR, Len: 2000}}}}
			if err := wr.Do(s.r); err != nil {
				return err
			}
			fr, err := s.port.Recv(s.wait())
			if err != nil {
				return fmt.Errorf("the DUT's Send with markers: %w", err)
			}
			s.r.Note("%v", fr)
			if fr.Err != nil || fr.Opcode() != wire.OpSend {
				return fmt.Errorf("the DUT's first FPDU is %v", fr)
			}
			return nil
		}}},
		Break: iwBreak("sends no markers", iwEditMPA(iwport.In, func(b []byte) { b[16] &^= wire.MPAFlagMarkers })),
	}
}

func init() {
	Register(iwMPACases...)
	Register(iwMPAMalformedCases...)
}

// SendRawMPA sends an MPA frame given as octets (a malformed one).
func SendRawMPA(name string, b []byte) IW {
	return IW{"send " + name, func(s *iwSession) error {
		frame, err := s.port.SendRaw(b)
		s.r.Note("#%d→ %s", frame, name)
		return err
	}}
}

// iwMPABytes is the frame f describes, edited.
func iwMPABytes(f wire.MPAFields, edit func(b []byte)) []byte {
	b, _ := wire.AppendMPAFrame(nil, &f)
	edit(b)
	return b
}

var iwMPAMalformedCases = []Case{{
	ID: "RFC5044-7.1.1/bad-key", Section: "RFC 5044 §7.1.1", Title: "a Request whose key is not \"MPA ID Req Frame\" is refused",
	Transport: IWARP, Setup: iwSetup(IWConn{Manual: true}, 0, 0),
	Steps: []Step{SendRawMPA("MPA Request keyed \"MPA ID Rex Frame\"", iwMPABytes(iwDefaultRequest(), func(b []byte) { b[9] = 'x' })),
		ExpectRefused},
	Break: iwBreak("takes any key", iwEditMPA(iwport.In, func(b []byte) { copy(b, wire.MPAKeyRequest) })),
}, {
	ID: "RFC5044-7.1.1/reply-key", Section: "RFC 5044 §7.1.1", Title: "a Reply sent where the Request belongs is refused",
	Transport: IWARP, Setup: iwSetup(IWConn{Manual: true}, 0, 0),
	Steps: []Step{SendRawMPA("MPA Reply as the first frame", iwMPABytes(iwDefaultRequest(), func(b []byte) { copy(b, wire.MPAKeyReply) })),
		ExpectRefused},
	Break: iwBreak("takes a Reply for a Request", iwEditMPA(iwport.In, func(b []byte) { copy(b, wire.MPAKeyRequest) })),
}, {
	ID: "RFC6581-9/short-words", Section: "RFC 6581 §9", Title: "an enhanced Request (Rev 2, S) with fewer than 4 octets of private data is refused",
	Transport: IWARP, Setup: iwSetup(IWConn{Manual: true}, 0, 0),
	Steps: []Step{SendRawMPA("MPA Request Rev 2, S, PD_Length 2", iwMPABytes(wire.MPAFields{CRC: true, Rev: wire.MPARev2, PrivateData: []byte{0, 1}},
		func(b []byte) { b[16] |= wire.MPAFlagEnhanced })), ExpectRefused},
	Break: iwBreak("ignores S without the words", iwEditMPA(iwport.In, func(b []byte) { b[16] &^= wire.MPAFlagEnhanced })),
}}
