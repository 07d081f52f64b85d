package wire

import "encoding/binary"

// The receive side of MPA full operation, RFC 5044 §6: TCP delivers the
// stream in pieces cut anywhere (an FPDU may span segments; one segment may
// hold several FPDUs; Linux siw often sends the CRC trailer as a segment of
// its own), and the receiver finds each FPDU by its ULPDU_Length.
//
// The Deframer is fed those pieces as they come and returns whole FPDUs:
//
//   - When an FPDU lies entirely inside the piece given to Next (and no
//     marker falls inside it), its ULPDU is returned as a view into that
//     piece: nothing is copied.
//   - Otherwise its octets are gathered, markers removed, in one internal
//     buffer of the largest FPDU the deframer accepts, allocated once and
//     reused: memory is bounded and the steady state allocates nothing.
//   - The CRC is computed over the wire octets (markers included) as they
//     pass, and each marker's FPDUPTR is checked against the framing.
//   - A ULPDU_Length above the limit, or a marker that disagrees with the
//     framing, means the framing is lost: the error sticks, and every later
//     call returns it. A CRC mismatch does not (the FPDU is returned with
//     CRCOK false; the engine sends a Terminate and closes, RFC 5044 §4.4).

// Deframed is one FPDU as the Deframer found it.
type Deframed struct {
	// ULPDU is the FPDU's ULPDU (a DDP segment), markers removed. It is a
	// view into the piece given to Next, or into the Deframer's buffer;
	// either way valid until the next call to Next.
	ULPDU []byte
	// Pad is the FPDU's pad, as ULPDU a view. RFC 5044 §4.1 has the sender
	// zero it and the receiver ignore it; Linux siw sends whatever its
	// buffer held (seen in the CRC-off captures), so a conformance check
	// can look here but the receive path must not.
	Pad []byte
	// Off is the stream offset of the FPDU's first octet (a marker at its
	// start included) and WireLen the number of stream octets it took.
	Off     uint32
	WireLen int
	// CRC is the CRC field as received; CRCOK is true when it matches, or
	// when CRCs are not in use.
	CRC   uint32
	CRCOK bool
}

// Deframer finds FPDUs in one direction of an MPA stream. The zero value is
// not usable; use NewDeframer.
type Deframer struct {
	framing  Framing
	maxULPDU int
	off      uint32 // stream offset of the next octet
	err      error  // sticky framing error

	// The FPDU being gathered (slow path).
	active bool
	start  uint32 // its stream offset
	wire   int    // stream octets taken so far
	buf    []byte // its octets without markers; cap = largest FPDU
	need   int    // its size without markers, once ULPDU_Length is known
	crc    uint32 // CRC of the wire octets before the CRC field so far
	mk     [MarkerLen]byte
	mkn    int // octets of a marker gathered so far
}

// NewDeframer returns a deframer for a direction framed as f that accepts
// ULPDUs up to maxULPDU octets (MaxULPDU at most; a peer sizes them to its
// TCP segment). The stream offset starts at 0: the first octet after the MPA
// Request or Reply of that direction.
func NewDeframer(f Framing, maxULPDU int) *Deframer {
	maxULPDU = min(max(maxULPDU, 0), MaxULPDU)
	if f.Markers {
		maxULPDU = min(maxULPDU, MaxULPDUMarkers)
	}
	return &Deframer{framing: f, maxULPDU: maxULPDU}
}

// Offset returns the stream offset of the next octet the deframer expects.
func (d *Deframer) Offset() uint32 { return d.off }

// Buffered returns how many octets of an incomplete FPDU the deframer holds.
func (d *Deframer) Buffered() int {
	if !d.active {
		return 0
	}
	return d.wire
}

// Err returns the sticky framing error, if any.
func (d *Deframer) Err() error { return d.err }

// Next consumes octets from p, the next piece of the stream, and returns the
// first FPDU that completes and how many octets of p it consumed. The caller
// calls Next again with p[n:] until it returns ErrIncomplete, which means
// that all of p was consumed (and kept, where it is part of an FPDU) and more
// of the stream is needed. Any other error is a sticky framing error:
// ErrFPDUTooLong or ErrBadMarker. Next never allocates after the deframer's
// buffer exists (it is made on first use).
func (d *Deframer) Next(p []byte) (Deframed, int, error) {
	if d.err != nil {
		return Deframed{}, 0, d.err
	}
	if !d.active {
		if r, n, ok := d.whole(p); ok || d.err != nil {
			return r, n, d.err
		}
	}
	return d.gather(p)
}

// whole is the fast path: an FPDU that starts at p[0] and lies entirely in
// p, with no marker inside it (one at its very start is fine), is returned
// as a view into p.
func (d *Deframer) whole(p []byte) (Deframed, int, bool) {
	lead := 0
	if d.framing.Markers && atMarker(d.off) {
		lead = MarkerLen
		if len(p) >= MarkerLen && Marker(p).FPDUPtr() != 0 {
			d.err = ErrBadMarker
			return Deframed{}, 0, false
		}
	}
	if len(p) < lead+LengthFieldLen {
		return Deframed{}, 0, false
	}
	ulen := int(binary.BigEndian.Uint16(p[lead:]))
	if ulen > d.maxULPDU {
		d.err = ErrFPDUTooLong
		return Deframed{}, 0, false
	}
	n := FPDULen(ulen)
	wire := lead + n
	if len(p) < wire || d.framing.Markers && wire > toMarker(d.off) {
		// Not all here yet, or a marker falls inside: gather it.
		return Deframed{}, 0, false
	}
	end := wire - CRCLen
	r := Deframed{
		ULPDU:   p[lead+LengthFieldLen : lead+LengthFieldLen+ulen],
		Pad:     p[lead+LengthFieldLen+ulen : end],
		Off:     d.off,
		WireLen: wire,
		CRC:     GetCRC(p[end:]),
		CRCOK:   true,
	}
	if d.framing.CRC {
		r.CRCOK = CRC(p[:end]) == r.CRC
	}
	d.off += uint32(wire)
	return r, wire, true
}

// gather is the slow path: it takes octets from p into d.buf, removing and
// checking markers, until the FPDU is complete or p is used up.
func (d *Deframer) gather(p []byte) (Deframed, int, error) {
	if d.buf == nil {
		d.buf = make([]byte, 0, FPDULen(d.maxULPDU))
	}
	used := 0
	for len(p) > 0 {
		if !d.active {
			d.active, d.start, d.wire = true, d.off, 0
			d.buf, d.need, d.crc, d.mkn = d.buf[:0], 0, 0, 0
		}
		if d.framing.Markers && (d.mkn > 0 || atMarker(d.off)) {
			k := copy(d.mk[d.mkn:], p)
			d.mkn += k
			d.take(k)
			p, used = p[k:], used+k
			if d.mkn < MarkerLen {
				break
			}
			d.mkn = 0
			if Marker(d.mk[:]).FPDUPtr() != uint16(d.off-MarkerLen-d.start)&^3 {
				d.err = ErrBadMarker
				return Deframed{}, used, d.err
			}
			if d.framing.CRC && d.coveredByCRC() {
				d.crc = UpdateCRC(d.crc, d.mk[:])
			}
			continue
		}
		want := LengthFieldLen - len(d.buf)
		if d.need > 0 {
			want = d.need - len(d.buf)
		}
		k := min(len(p), want)
		if d.framing.Markers {
			k = min(k, toMarker(d.off))
		}
		if d.framing.CRC {
			if c := d.crcPart(k); c > 0 {
				d.crc = UpdateCRC(d.crc, p[:c])
			}
		}
		d.buf = append(d.buf, p[:k]...)
		d.take(k)
		p, used = p[k:], used+k
		if d.need == 0 && len(d.buf) == LengthFieldLen {
			ulen := int(binary.BigEndian.Uint16(d.buf))
			if ulen > d.maxULPDU {
				d.err = ErrFPDUTooLong
				return Deframed{}, used, d.err
			}
			d.need = FPDULen(ulen)
		}
		if d.need > 0 && len(d.buf) == d.need {
			d.active = false
			end := d.need - CRCLen
			ulen := int(binary.BigEndian.Uint16(d.buf))
			r := Deframed{
				ULPDU:   d.buf[LengthFieldLen : LengthFieldLen+ulen],
				Pad:     d.buf[LengthFieldLen+ulen : end],
				Off:     d.start,
				WireLen: d.wire,
				CRC:     GetCRC(d.buf[end:]),
				CRCOK:   !d.framing.CRC || d.crc == GetCRC(d.buf[end:]),
			}
			return r, used, nil
		}
	}
	return Deframed{}, used, ErrIncomplete
}

func (d *Deframer) take(k int) {
	d.off += uint32(k)
	d.wire += k
}

// coveredByCRC reports whether a marker at the current position lies before
// the FPDU's CRC field.
func (d *Deframer) coveredByCRC() bool {
	return d.need == 0 || len(d.buf) <= d.need-CRCLen
}

// crcPart is how many of the next k FPDU octets lie before the CRC field.
func (d *Deframer) crcPart(k int) int {
	if d.need == 0 {
		return k // the length field: an FPDU is at least MinFPDULen
	}
	return min(k, d.need-CRCLen-len(d.buf))
}
