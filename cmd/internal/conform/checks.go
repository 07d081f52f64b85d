// Checks on the frames the DUT sends: each says what it wants, so that a
// FAIL's detail reads as the rule.

package conform

import (
	"bytes"
	"fmt"

	"github.com/rnic/rnic/roce/wire"
)

// Check is one expectation on a DUT frame; it returns what was wrong.
type Check struct {
	Name string
	F    func(r *Run, f *Frame) error
}

func check(name string, f func(r *Run, f *Frame) error) Check { return Check{name, f} }

// IsOp wants one of the opcodes.
func IsOp(ops ...wire.Opcode) Check {
	return check(fmt.Sprint("opcode ", ops), func(r *Run, f *Frame) error {
		for _, o := range ops {
			if f.Op() == o {
				return nil
			}
		}
		return fmt.Errorf("opcode %v, want %v", f.Op(), ops)
	})
}

// PSNIs wants the PSN rel packets after the tester's first request (a
// response's PSN).
func PSNIs(rel int) Check {
	return check(fmt.Sprintf("psn+%d", rel), func(r *Run, f *Frame) error {
		if got, want := f.H.BTH.PSN, r.PSN(rel); got != want {
			return fmt.Errorf("PSN %#06x (psn%+d), want %#06x (psn%+d)", got, wire.PSNDiff(got, r.PSN(0)), want, rel)
		}
		return nil
	})
}

// DUTPSNIs wants the DUT's request PSN rel packets after its first.
func DUTPSNIs(rel int) Check {
	return check(fmt.Sprintf("dut psn+%d", rel), func(r *Run, f *Frame) error {
		if got, want := f.H.BTH.PSN, r.DUTPSN(rel); got != want {
			return fmt.Errorf("PSN %#06x (dut psn%+d), want %#06x (dut psn%+d)", got, wire.PSNDiff(got, r.DUTPSN(0)), want, rel)
		}
		return nil
	})
}

func aeth(f *Frame) (wire.Syndrome, error) {
	if !f.H.BTH.Opcode.Info().Has(wire.HdrAETH) {
		return 0, fmt.Errorf("%v carries no AETH", f.Op())
	}
	return f.H.AETH.Syndrome, nil
}

// IsACK wants a positive acknowledgement (any credit count).
func IsACK() Check {
	return check("ACK", func(r *Run, f *Frame) error {
		s, err := aeth(f)
		if err == nil && s.Type() != wire.AckTypeACK {
			err = fmt.Errorf("AETH %v, want ACK", s)
		}
		return err
	})
}

// IsNAK wants a NAK with code c.
func IsNAK(c wire.NAKCode) Check {
	return check("NAK "+c.String(), func(r *Run, f *Frame) error {
		s, err := aeth(f)
		if err == nil && (s.Type() != wire.AckTypeNAK || s.NAK() != c) {
			err = fmt.Errorf("AETH %v, want NAK %v", s, c)
		}
		return err
	})
}

// IsRNRNAK wants an RNR NAK carrying the QP's min_rnr_timer.
func IsRNRNAK() Check {
	return check("RNR NAK with min_rnr_timer", func(r *Run, f *Frame) error {
		s, err := aeth(f)
		if err == nil && (s.Type() != wire.AckTypeRNRNAK || s.Value() != r.Attrs.MinRNRTimer&0x1F) {
			err = fmt.Errorf("AETH %v, want RNR NAK timer=%d", s, r.Attrs.MinRNRTimer)
		}
		return err
	})
}

// MSNIs wants the AETH's MSN: n messages completed since the QP came up.
func MSNIs(n uint32) Check {
	return check(fmt.Sprintf("msn %d", n), func(r *Run, f *Frame) error {
		if _, err := aeth(f); err != nil {
			return err
		}
		if f.H.AETH.MSN != n&wire.PSNMask {
			return fmt.Errorf("MSN %d, want %d", f.H.AETH.MSN, n)
		}
		return nil
	})
}

// CreditsValid wants an ACK whose credit field is a real count (not the
// "invalid" code 31) of at least min WQEs.
func CreditsValid(min int) Check {
	return check(fmt.Sprintf("credits >= %d", min), func(r *Run, f *Frame) error {
		s, err := aeth(f)
		if err != nil {
			return err
		}
		n, unlimited := s.Credits()
		if s.Type() != wire.AckTypeACK || unlimited || n < min {
			return fmt.Errorf("AETH %v, want ACK with credits >= %d", s, min)
		}
		return nil
	})
}

// PayloadIs wants the payload bytes.
func PayloadIs(want []byte) Check {
	return check(fmt.Sprintf("payload of %d bytes", len(want)), func(r *Run, f *Frame) error {
		if got := f.F.Packet.Payload(); !bytes.Equal(got, want) {
			return fmt.Errorf("payload %s, want %s", short(got), short(want))
		}
		return nil
	})
}

// PayloadLen wants an n-byte payload.
func PayloadLen(n int) Check {
	return check(fmt.Sprintf("payload length %d", n), func(r *Run, f *Frame) error {
		if got := len(f.F.Packet.Payload()); got != n {
			return fmt.Errorf("payload length %d, want %d", got, n)
		}
		return nil
	})
}

// OrigIs wants an ATOMIC Acknowledge's original remote data.
func OrigIs(v uint64) Check {
	return check(fmt.Sprintf("orig data %#x", v), func(r *Run, f *Frame) error {
		if f.Op() != wire.RCAtomicAck {
			return fmt.Errorf("%v, want ATOMIC Acknowledge", f.Op())
		}
		if f.H.AtomicAck != v {
			return fmt.Errorf("original data %#x, want %#x", f.H.AtomicAck, v)
		}
		return nil
	})
}

// FrameFunc is a check of the case's own.
func FrameFunc(name string, fn func(r *Run, f *Frame) error) Check { return check(name, fn) }

// wellFormed is checked on every frame an Expect takes: a RoCEv2 frame
// with a correct ICRC, addressed to the tester's QP.
func wellFormed(r *Run, f *Frame) error {
	if f.Err != nil {
		return fmt.Errorf("frame %d is not a well-formed RoCEv2 frame: %v", f.No, f.Err)
	}
	if !f.F.VerifyICRC() {
		return fmt.Errorf("frame %d has a bad ICRC", f.No)
	}
	if f.H.BTH.DestQP != r.TesterQPN && f.Op() != wire.CNP {
		return fmt.Errorf("frame %d is for QP %#x, not the tester's %#x", f.No, f.H.BTH.DestQP, r.TesterQPN)
	}
	return nil
}

// describe is a frame in evidence: number, opcode, PSN, AETH.
func describe(r *Run, f *Frame) string {
	if f.Err != nil {
		return fmt.Sprintf("#%d←undecodable (%v)", f.No, f.Err)
	}
	// Responses count from the tester's first request, the DUT's own
	// requests from its first.
	base, tag := r.PSN(0), "psn"
	switch f.Op().Info().Kind {
	case wire.KindAck, wire.KindAtomicAck, wire.KindReadResponse:
	default:
		base, tag = r.DUTPSN(0), "dut psn"
	}
	s := fmt.Sprintf("#%d←%v %s%+d", f.No, f.Op(), tag, wire.PSNDiff(f.H.BTH.PSN, base))
	if f.Op().Info().Has(wire.HdrAETH) {
		s += fmt.Sprintf(" %v msn %d", f.H.AETH.Syndrome, f.H.AETH.MSN)
	}
	return s
}

func short(b []byte) string {
	if len(b) > 16 {
		return fmt.Sprintf("%x… (%d bytes)", b[:16], len(b))
	}
	return fmt.Sprintf("%x", b)
}
