package iwport

import (
	"fmt"
	"time"

	"github.com/rnic/rnic/iwarp/wire"
)

// Tx says how to misframe one FPDU; the zero value frames it correctly
// with the negotiated framing.
type Tx struct {
	// BadCRC sends a CRC field that does not match (the correct CRC with
	// its low bit flipped, or 0xFFFFFFFF where CRCs are off).
	BadCRC bool
	// CRC, if not nil, is sent in the CRC field as it is.
	CRC *uint32
}

// Sent is what SendSegment put on the wire.
type Sent struct {
	ULPDU []byte // the DDP segment: what a Terminate's headers come from
	Frame int    // capture frame
}

// SendSegment frames the ULPDU (h's headers, then payload) as an FPDU with
// the framing set by SetFraming, misframed as tx says, and sends it. The
// headers are taken as they are: a case can send any opcode on any queue
// with any version (h.DDP.Tagged is honoured only for opcodes the table
// does not know; see AppendRaw for full control).
func (p *Port) SendSegment(h *wire.Headers, payload []byte, tx Tx) (Sent, error) {
	return p.SendULPDU(wire.AppendSegment(nil, h, payload), tx)
}

// SendULPDU frames and sends an arbitrary ULPDU.
func (p *Port) SendULPDU(ulpdu []byte, tx Tx) (Sent, error) {
	p.mu.Lock()
	if !p.mpaDone {
		p.mu.Unlock()
		return Sent{}, fmt.Errorf("iwport: FPDU before SetFraming")
	}
	f, off := p.tx, p.txOff
	b := wire.AppendFPDU(nil, f, off, ulpdu, nil)
	p.txOff += uint32(len(b))
	p.mu.Unlock()
	if tx.BadCRC || tx.CRC != nil {
		c := wire.GetCRC(b[len(b)-wire.CRCLen:])
		switch {
		case tx.CRC != nil:
			c = *tx.CRC
		case f.CRC:
			c ^= 1
		default:
			c = 0xFFFFFFFF
		}
		wire.PutCRC(b[len(b)-wire.CRCLen:], c)
	}
	frame, err := p.SendRaw(b)
	return Sent{ULPDU: ulpdu, Frame: frame}, err
}

// Frame is one FPDU the DUT sent, decoded. String gives it as an evidence
// line names it: "#n←" and its fields.
type Frame struct {
	Frame int    // capture frame (0 without a capture)
	ULPDU []byte // the DDP segment, markers removed
	Pad   []byte
	CRC   uint32 // the CRC field as sent
	CRCOK bool   // it matched, or CRCs are off
	// Err is why the segment does not decode (a malformed header, a
	// reserved opcode); Seg is valid only when Err is nil.
	Err error
	Seg wire.Segment
	Hdr wire.Headers
	// Term is the Terminate body of a Terminate message.
	Term *wire.TermFields
}

// Opcode is the RDMAP opcode of the segment, whatever Err says.
func (f *Frame) Opcode() wire.Opcode {
	if len(f.ULPDU) < 2 {
		return 0xFF
	}
	return wire.DDPHeader(f.ULPDU).Opcode()
}

func (f *Frame) String() string {
	if f.Err != nil {
		return fmt.Sprintf("#%d← undecodable segment (%v)", f.Frame, f.Err)
	}
	if f.Term != nil {
		return fmt.Sprintf("#%d← Terminate %#04x (%v) M=%v D=%v R=%v", f.Frame, uint16(f.Term.Code), f.Term.Code, f.Term.M, f.Term.D, f.Term.R)
	}
	d := f.Hdr.DDP
	if d.Tagged {
		return fmt.Sprintf("#%d← %v STag %#x TO %#x L=%v %dB", f.Frame, d.Opcode, d.STag, d.TO, d.Last, len(f.Seg.Payload()))
	}
	return fmt.Sprintf("#%d← %v QN %d MSN %d MO %d L=%v %dB", f.Frame, d.Opcode, d.QN, d.MSN, d.MO, d.Last, len(f.Seg.Payload()))
}

// Recv waits up to d for the DUT's next FPDU. A framing error (a ULPDU
// length or marker the deframer cannot follow) is returned as an error;
// a segment that does not decode is returned as a Frame with Err set.
func (p *Port) Recv(d time.Duration) (*Frame, error) {
	var fr *Frame
	err := p.wait(d, func() (bool, error) {
		if p.dfr == nil {
			return true, fmt.Errorf("iwport: Recv before SetFraming")
		}
		if len(p.rx) == 0 {
			return false, nil
		}
		frame := p.frameOf(p.rxOff)
		df, n, err := p.dfr.Next(p.rx)
		p.consume(n)
		if err == wire.ErrIncomplete {
			return false, nil
		}
		if err != nil {
			return true, fmt.Errorf("iwport: the DUT's FPDU framing is lost at stream offset %d: %w", p.dfr.Offset(), err)
		}
		fr = decode(df, frame)
		return true, nil
	})
	return fr, err
}

func decode(df wire.Deframed, frame int) *Frame {
	fr := &Frame{Frame: frame, ULPDU: append([]byte(nil), df.ULPDU...), Pad: append([]byte(nil), df.Pad...),
		CRC: df.CRC, CRCOK: df.CRCOK}
	if fr.Err = fr.Seg.Decode(fr.ULPDU); fr.Err != nil {
		return fr
	}
	fr.Hdr = fr.Seg.Headers()
	if t := fr.Seg.Terminate(); t != nil {
		tf := t.Fields()
		fr.Term = &tf
	}
	return fr
}

// RecvUntil receives FPDUs until one satisfies match, for up to d in all;
// the frames skipped are returned too, in order.
func (p *Port) RecvUntil(d time.Duration, match func(*Frame) bool) (*Frame, []*Frame, error) {
	deadline := time.Now().Add(d)
	var skipped []*Frame
	for {
		fr, err := p.Recv(time.Until(deadline))
		if err != nil {
			return nil, skipped, err
		}
		if match(fr) {
			return fr, skipped, nil
		}
		skipped = append(skipped, fr)
	}
}

// Redecode returns a copy of f decoded from ulpdu instead (a reading of
// the same frame with some field moved where the decoder expects it);
// the frame number, pad and CRC stay f's.
func (f *Frame) Redecode(ulpdu []byte) *Frame {
	return decode(wire.Deframed{ULPDU: ulpdu, Pad: f.Pad, CRC: f.CRC, CRCOK: f.CRCOK}, f.Frame)
}
