package iwconform

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/rnic/rnic/iwarp/wire"
	"github.com/rnic/rnic/nic/tools/conform/iwport"
	"github.com/rnic/rnic/nic/verbs"
)

// MPA connection setup: RFC 5044 §7.1 and RFC 6581 §9.

// CheckReply checks the DUT's MPA Reply.
func CheckReply(what string, check func(rep wire.MPAFields) error) Step {
	return Do("check the Reply's "+what, func(s *Session) error {
		return check(wire.MPAFrame(s.Rep).Fields())
	})
}

// CheckRequest checks the DUT's MPA Request.
func CheckRequest(what string, check func(req wire.MPAFields) error) Step {
	return Do("check the Request's "+what, func(s *Session) error {
		return check(wire.MPAFrame(s.Req).Fields())
	})
}

// SendRequest sends an MPA Request (a manual case's first step).
func SendRequest(f wire.MPAFields) Step {
	return Do("send MPA Request", func(s *Session) error {
		frame, err := s.SendRequest(&f)
		s.Note("sent MPA Request rev %d M=%v C=%v S=%v PD %dB (frame %d)", f.Rev, f.Markers, f.CRC, f.Enhanced, len(f.PrivateData), frame)
		return err
	})
}

// ExpectRefused checks that the DUT does not accept the connection: an
// MPA Reply with R set, or the stream closed without a Reply (RFC 5044
// §7.1.1 allows either); and the DUT's rdma_cm does not establish it.
func ExpectRefused() Step {
	return Do("expect the connection refused", func(s *Session) error {
		m, err := s.Port.RecvMPA(s.wait())
		switch {
		case err == nil && m.Reject:
			s.Note("MPA Reply with R=1 (frame %d)", m.Frame)
		case err == nil:
			return fmt.Errorf("the DUT accepted: MPA Reply with R=0 (frame %d)", m.Frame)
		case errors.Is(err, iwport.ErrClosed):
			s.Note("stream closed without a Reply")
		default:
			return fmt.Errorf("neither a reject nor a close: %w", err)
		}
		select {
		case err := <-s.Accepted:
			if err == nil {
				return errors.New("the DUT's rdma_cm established the connection")
			}
		default:
		}
		return nil
	})
}

// ExpectAccepted reads the DUT's Reply to a manual Request, wants R=0,
// starts full operation and waits for the DUT's rdma_cm.
func ExpectAccepted() Step {
	return Do("expect the connection accepted", func(s *Session) error {
		m, err := s.Port.RecvMPA(s.wait())
		if err != nil {
			return fmt.Errorf("no MPA Reply: %w", err)
		}
		s.Note("MPA Reply rev %d R=%v (frame %d)", m.Rev, m.Reject, m.Frame)
		if m.Reject || !m.Reply {
			return fmt.Errorf("the DUT refused: Reply R=%v (frame %d)", m.Reject, m.Frame)
		}
		s.Rep = m.Raw
		s.startFPDUs()
		return s.established()
	})
}

func mpaCases() []Case {
	rev1 := wire.MPAFields{CRC: true, Rev: wire.MPARev1}
	return []Case{{
		ID: "RFC5044-7.1.1-reply", Section: "RFC 5044 §7.1.1", Title: "MPA Reply: key, R=0 on accept, reserved bits zero",
		Steps: []Step{CheckReply("key and flags", func(r wire.MPAFields) error {
			if !r.Reply || r.Reject || r.Reserved != 0 {
				return fmt.Errorf("Reply key=%v R=%v Res=%#x", r.Reply, r.Reject, r.Reserved)
			}
			return nil
		})},
		Break: editMPA(iwport.Out, func(b []byte) { b[16] |= 0x01 }),
	}, {
		ID: "RFC5044-7.1.1-request", Section: "RFC 5044 §7.1.1", Title: "MPA Request: key, revision 1 or 2, R=0, reserved bits zero",
		Setup: Setup{DUTConnects: true},
		Steps: []Step{CheckRequest("key and flags", func(r wire.MPAFields) error {
			if r.Reply || r.Reject || r.Reserved != 0 || r.Rev < wire.MPARev1 || r.Rev > wire.MPARev2 {
				return fmt.Errorf("Request key=%v R=%v Res=%#x Rev=%d", !r.Reply, r.Reject, r.Reserved, r.Rev)
			}
			return nil
		})},
		Break: editMPA(iwport.Out, func(b []byte) { b[16] |= 0x02 }),
	}, {
		ID: "RFC5044-7.1.1-rev1", Section: "RFC 5044 §7.1.1, RFC 6581 §9", Title: "a Rev 1 Request gets a Rev 1 Reply without S",
		Setup: Setup{Request: &rev1},
		Steps: []Step{CheckReply("revision", func(r wire.MPAFields) error {
			if r.Rev != wire.MPARev1 || r.Enhanced {
				return fmt.Errorf("Reply Rev %d S=%v to a Rev 1 Request", r.Rev, r.Enhanced)
			}
			return nil
		})},
		Break: editMPA(iwport.Out, func(b []byte) { b[17] = wire.MPARev2 }),
	}, {
		ID: "RFC5044-7.1.1-rev-unknown", Section: "RFC 5044 §7.1.1", Title: "a Request of an unknown revision (3) is refused",
		Setup: Setup{Manual: true},
		Steps: []Step{SendRequest(wire.MPAFields{CRC: true, Rev: 3}), ExpectRefused()},
		Break: editMPA(iwport.In, func(b []byte) { b[17] = wire.MPARev1 }),
	}, {
		ID: "RFC5044-7.1.1-pd-512", Section: "RFC 5044 §7.1.1", Title: "512 octets of private data reach the ULP intact",
		Setup: Setup{Request: &wire.MPAFields{CRC: true, Rev: wire.MPARev1, PrivateData: pattern(512, 3)}},
		Steps: []Step{Do("check the private data the DUT's ULP got", func(s *Session) error {
			if !bytes.Equal(s.AcceptPD, pattern(512, 3)) {
				return fmt.Errorf("the DUT's ULP got %d octets of private data that differ from the 512 sent", len(s.AcceptPD))
			}
			s.Note("ULP got 512 octets")
			return nil
		})},
		Deviations: map[string]string{"siw": "protocols.md §2.2: private data ≤ RDMA_MAX_PRIVATE_DATA (256)"},
		Break:      editMPA(iwport.In, func(b []byte) { b[len(b)-1] ^= 0xFF }),
	}, {
		ID: "RFC5044-7.1.1-pd-513", Section: "RFC 5044 §7.1.1", Title: "PD_Length above 512 is refused",
		Setup: Setup{Manual: true},
		Steps: []Step{SendRequest(wire.MPAFields{CRC: true, Rev: wire.MPARev1, PrivateData: pattern(513, 1)}), ExpectRefused()},
		Break: editMPA(iwport.In, func(b []byte) { binary.BigEndian.PutUint16(b[18:], 512) }),
	}, {
		ID: "RFC5044-7.1.1-crc-reply", Section: "RFC 5044 §7.1.1", Title: "a Request with C=1 gets a Reply with C=1",
		Steps: []Step{CheckReply("C bit", func(r wire.MPAFields) error {
			if !r.CRC {
				return errors.New("Reply C=0 to a Request with C=1")
			}
			return nil
		})},
		Break: editMPA(iwport.Out, func(b []byte) { b[16] &^= wire.MPAFlagCRC }),
	}, markersCase(), {
		ID: "RFC6581-9-words", Section: "RFC 6581 §9", Title: "an enhanced Request gets an enhanced Reply: Rev 2, S, IRD/ORD words",
		Setup: Setup{IRD: 3, ORD: 2},
		Steps: []Step{CheckReply("IRD/ORD words", func(r wire.MPAFields) error {
			if r.Rev != wire.MPARev2 || !r.Enhanced {
				return fmt.Errorf("Reply Rev %d S=%v to an enhanced Request", r.Rev, r.Enhanced)
			}
			if r.IRDORD.IRD == 0 {
				return fmt.Errorf("Reply IRD 0: the DUT serves no RDMA Read")
			}
			return nil
		})},
		Break: editMPA(iwport.Out, func(b []byte) { b[16] &^= wire.MPAFlagEnhanced }),
	}}
}

// markersCase: RFC 5044 §7.1.1 M and §4.3: a DUT either refuses markers
// (a Reply with R=1, as siw does) or inserts them where §4.3 puts them.
func markersCase() Case {
	req := DefaultRequest()
	req.Markers = true
	return Case{
		ID: "RFC5044-4.3-markers", Section: "RFC 5044 §4.3, §7.1.1", Title: "markers asked for are refused or sent every 512 octets",
		Setup: Setup{Manual: true},
		Steps: []Step{SendRequest(req), Do("markers refused, or honoured", func(s *Session) error {
			m, err := s.Port.RecvMPA(s.wait())
			if err != nil {
				return fmt.Errorf("no MPA Reply: %w", err)
			}
			if m.Reject {
				s.Note("markers refused: Reply R=1 (frame %d)", m.Frame)
				return nil
			}
			s.Rep = m.Raw
			s.startFPDUs()
			if err := s.established(); err != nil {
				return err
			}
			if err := s.DUT.PostSend(s.Ctx, s.QP, SendWR{ID: 1, Opcode: verbs.WRSend, MR: s.MR, Len: 2000}); err != nil {
				return err
			}
			fr, err := s.Port.Recv(s.wait())
			if err != nil {
				return fmt.Errorf("the DUT's Send with markers: %w", err)
			}
			s.Note("got %v", fr)
			if fr.Err != nil || fr.Opcode() != wire.OpSend {
				return fmt.Errorf("the DUT's first FPDU is %v", fr)
			}
			return nil
		})},
		Deviations: map[string]string{},
		Break:      editMPA(iwport.In, func(b []byte) { b[16] &^= wire.MPAFlagMarkers }),
	}
}
