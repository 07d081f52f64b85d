// Linux siw's Terminate Control layout, and how a case reads a Terminate
// laid out that way to judge its own rule.
//
// RFC 5040 §4.8 draws the Terminate Control as one 32-bit word in network
// order: Layer in the top 4 bits, then EType (4), Error Code (8), then
// the flags M, D, R and 13 reserved bits. siw declares the word as a C
// bitfield of __be32 members; on a little-endian machine a compiler
// allocates bitfields from the lowest bit of the storage unit up, and the
// unit is stored low byte first, so the fields land on the wire as:
//
//	octet 0: EType in the high nibble, Layer in the low one (swapped)
//	octet 1: Error Code (where the RFC puts it)
//	octet 2: M in bit 0, D in bit 1, R in bit 2, reserved above
//	octet 3: reserved
//
// For a DDP tagged error with the offending header attached (M and D),
// the RFC wants 11 00 c0 00; siw sends 11 00 03 00, which a reader of the
// RFC takes for M=D=R=0 with reserved bits 0x0300 set, and then a body
// 16 octets longer than the flags allow (iwarp: bad_length). For an RDMAP
// error with no headers (Layer 0, EType 2, code 5), siw's 20 05 00 00
// reads as the LLP code 0x2005. The headers behind the word are where the
// RFC puts them.

package conform

import (
	"fmt"

	"github.com/rnic/rnic/cmd/internal/conform/iwport"
	"github.com/rnic/rnic/iwarp/wire"
)

// CauseTermLayout names the root cause: a Terminate Control laid out as
// a little-endian C bitfield.
const CauseTermLayout = "terminate-control-bitfield"

// Bits of the Terminate Control's flags octet (the third), per the RFC
// and per the little-endian bitfield.
const (
	rfcFlagM, rfcFlagD, rfcFlagR = 0x80, 0x40, 0x20
	leFlagM, leFlagD, leFlagR    = 0x01, 0x02, 0x04
)

// termControlFromLE rewrites a Terminate Control word (4 octets) laid
// out as a little-endian bitfield into the RFC's layout, in place.
func termControlFromLE(c []byte) {
	c[0] = c[0]<<4 | c[0]>>4
	reserved := uint16(c[2])>>3 | uint16(c[3])<<5
	var flags uint16
	if c[2]&leFlagM != 0 {
		flags |= rfcFlagM << 8
	}
	if c[2]&leFlagD != 0 {
		flags |= rfcFlagD << 8
	}
	if c[2]&leFlagR != 0 {
		flags |= rfcFlagR << 8
	}
	ctl := flags | reserved&0x1FFF
	c[2], c[3] = byte(ctl>>8), byte(ctl)
}

// termControlToLE is the inverse: the RFC's layout into the bitfield's
// (a Break makes rnic's Terminates look like siw's with it).
func termControlToLE(c []byte) {
	c[0] = c[0]<<4 | c[0]>>4
	ctl := uint16(c[2])<<8 | uint16(c[3])
	reserved := ctl & 0x1FFF
	var flags byte
	if c[2]&rfcFlagM != 0 {
		flags |= leFlagM
	}
	if c[2]&rfcFlagD != 0 {
		flags |= leFlagD
	}
	if c[2]&rfcFlagR != 0 {
		flags |= leFlagR
	}
	c[2] = flags | byte(reserved<<3)
	c[3] = byte(reserved >> 5)
}

// termAsLE reads a Terminate FPDU as if its control word were laid out
// as a little-endian bitfield: the frame decoded from a copy whose word
// is moved into the RFC's layout. ok is false when it is no Terminate or
// does not decode that way either.
func termAsLE(fr *iwport.Frame) (*iwport.Frame, bool) {
	at := wire.DDPUntaggedLen
	if fr.Opcode() != wire.OpTerminate || len(fr.ULPDU) < at+wire.TermControlLen {
		return nil, false
	}
	u := append([]byte(nil), fr.ULPDU...)
	termControlFromLE(u[at : at+wire.TermControlLen])
	alt := fr.Redecode(u)
	return alt, alt.Err == nil && alt.Term != nil
}

// termLayoutFinding is the finding for a Terminate that only the
// bitfield layout explains; strict is how the RFC's layout read it.
func termLayoutFinding(fr, alt *iwport.Frame, strict string) Finding {
	at := wire.DDPUntaggedLen
	return Finding{
		Cause:   CauseTermLayout,
		Section: "RFC 5040 §4.8",
		Rule:    "the Terminate Control is Layer, EType, Error Code, then the M, D and R flags in the top bits of the third octet; the reserved bits are zero",
		Evidence: fmt.Sprintf("#%d← Terminate, ULPDU %d octets, control % x: as RFC 5040 lays it out, %s; "+
			"as a little-endian bitfield (Layer and EType swapped, M/D/R in bits 0-2 of octet 2), %#04x (%v) M=%v D=%v R=%v with %d octets of headers",
			fr.Frame, len(fr.ULPDU), fr.ULPDU[at:at+wire.TermControlLen], strict,
			uint16(alt.Term.Code), alt.Term.Code, alt.Term.M, alt.Term.D, alt.Term.R, len(fr.ULPDU)-at-wire.TermControlLen),
	}
}

// strictReading says how the RFC's layout reads a Terminate frame.
func strictReading(fr *iwport.Frame) string {
	if fr.Term == nil {
		return fmt.Sprintf("it does not decode (%v)", fr.Err)
	}
	t := fr.Term
	return fmt.Sprintf("%#04x (%v) M=%v D=%v R=%v reserved %#04x", uint16(t.Code), t.Code, t.M, t.D, t.R, t.Reserved)
}

// judgeTerminate checks the DUT's Terminate against a case's rule
// (check), reading it as the RFC lays it out and, failing that, as the
// bitfield layout: a Terminate that only the latter reads, or only the
// latter passes, is judged on the case's rule that way, with the layout
// recorded as a finding. One that neither reads could not be judged.
func (s *iwSession) judgeTerminate(fr *iwport.Frame, check func(*iwport.Frame) error) error {
	var strictErr error
	if fr.Err == nil && fr.Term != nil {
		if strictErr = check(fr); strictErr == nil {
			return nil
		}
	}
	alt, ok := termAsLE(fr)
	if !ok {
		if strictErr != nil {
			return strictErr
		}
		return CannotRun(fmt.Errorf("the DUT's Terminate (#%d←) does not decode: %w", fr.Frame, fr.Err))
	}
	altErr := check(alt)
	if strictErr != nil && altErr != nil {
		// Both readings decode and neither meets the rule: which layout
		// the DUT meant is not known, so the evidence gives both.
		s.r.Note("#%d← read as a little-endian bitfield instead: Terminate %#04x (%v)", fr.Frame, uint16(alt.Term.Code), alt.Term.Code)
		return strictErr
	}
	s.r.Find(termLayoutFinding(fr, alt, strictReading(fr)))
	s.r.Note("#%d← read as a little-endian bitfield: Terminate %#04x M=%v D=%v R=%v", fr.Frame, uint16(alt.Term.Code), alt.Term.M, alt.Term.D, alt.Term.R)
	*fr = *alt
	return altErr
}

// TerminateAsLE is a Break for the in-process iWARP DUT that lays its
// Terminate Control out as a little-endian bitfield, as siw does: tests
// of what a report makes of the finding run a case with it.
func TerminateAsLE() *Break {
	return iwBreak("lays its Terminate Control out as siw does", iwTermAsLE())
}
