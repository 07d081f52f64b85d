package wire

import "encoding/binary"

// An FPDU (Framed Protocol Data Unit), RFC 5044 §4.1, frames one ULPDU (one
// DDP segment) on the TCP byte stream:
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|          ULPDU_Length         |                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+                               +
//	|                                                               |
//	~                             ULPDU                             ~
//	|                                                               |
//	|                               +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                               |          PAD (0-3 octets)     |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                     CRC (32, little-endian)                   |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
//   - ULPDU_Length (big-endian) counts the ULPDU only: not itself, the pad,
//     the CRC or any markers.
//   - The pad makes 2+ULPDU_Length a multiple of 4, so every FPDU is a whole
//     number of 32-bit words. It is zero on send, ignored on receive and
//     covered by the CRC. Linux siw leaks buffer octets into it (14 FPDUs
//     of the captures); Deframed.Pad shows them.
//   - The CRC field is always there: CRC-32C (crc.go) when either side asked
//     for CRCs, else zero.
//   - With markers in use (marker.go) a marker is inserted wherever the
//     stream reaches a multiple of 512 octets, anywhere in the FPDU.
//
// RFC 5044 §4.5 (and siw, except when it negotiated GSO privately) sizes an
// FPDU to fit one TCP segment when it is sent; receivers must not rely on it
// (§6): FPDUs are found by ULPDU_Length in the byte stream (deframe.go).

// Framing is what MPA negotiated for one direction of a connection.
type Framing struct {
	CRC     bool // CRC-32C in the CRC field (else zero)
	Markers bool // markers every 512 octets of the stream
}

// FPDU field sizes and limits.
const (
	LengthFieldLen = 2
	// MaxULPDU is the largest ULPDU_Length.
	MaxULPDU = 0xFFFF
	// MaxULPDUMarkers is the largest ULPDU this package frames with
	// markers: every marker's FPDUPTR must fit 16 bits, so the FPDU with
	// its markers must stay under 64 KiB.
	MaxULPDUMarkers = 0xFFFF - 1024
	// MinFPDULen is the size of an FPDU with an empty ULPDU.
	MinFPDULen = LengthFieldLen + 2 + CRCLen
)

// PadLen is the pad that follows a ULPDU of n octets.
func PadLen(n int) int { return -(LengthFieldLen + n) & 3 }

// FPDULen is the size of the FPDU of an n-octet ULPDU, without markers.
func FPDULen(n int) int { return LengthFieldLen + n + PadLen(n) + CRCLen }

// FramedLen is the number of stream octets AppendFPDU writes for an n-octet
// ULPDU starting at stream offset off.
func FramedLen(f Framing, off uint32, n int) int {
	if !f.Markers {
		return FPDULen(n)
	}
	return MarkedLen(off, FPDULen(n))
}

// FPDU is a view of a whole FPDU without markers, from ULPDU_Length through
// the CRC. Use it on bytes known to hold one (ParseFPDU checks the length).
type FPDU []byte

// ParseFPDU returns the view of the FPDU at the start of b (which must not
// contain markers) and its size, ErrIncomplete when b ends before it does.
func ParseFPDU(b []byte) (FPDU, int, error) {
	if len(b) < LengthFieldLen {
		return nil, 0, ErrIncomplete
	}
	n := FPDULen(int(binary.BigEndian.Uint16(b)))
	if len(b) < n {
		return nil, 0, ErrIncomplete
	}
	return FPDU(b[:n]), n, nil
}

func (f FPDU) ULPDULength() int { return int(binary.BigEndian.Uint16(f)) }
func (f FPDU) ULPDU() []byte    { return f[LengthFieldLen : LengthFieldLen+f.ULPDULength()] }
func (f FPDU) Pad() []byte      { return f[LengthFieldLen+f.ULPDULength() : len(f)-CRCLen] }

// WireCRC returns the CRC field.
func (f FPDU) WireCRC() uint32 { return GetCRC(f[len(f)-CRCLen:]) }

// ComputeCRC computes the CRC the FPDU should carry.
func (f FPDU) ComputeCRC() uint32 { return CRC(f[:len(f)-CRCLen]) }

// AppendFPDU frames the ULPDU hdr‖payload and appends the FPDU to dst: the
// ULPDU is given in two parts so that the engine can build headers apart from
// a payload it copies only once. off is the stream offset of the FPDU's first
// octet (needed only with markers: marker.go); the FPDU occupies
// FramedLen(f, off, len(hdr)+len(payload)) octets. It panics if the ULPDU is
// larger than MaxULPDU, or MaxULPDUMarkers with markers: the engine sizes
// FPDUs to the TCP segment, far below either.
func AppendFPDU(dst []byte, f Framing, off uint32, hdr, payload []byte) []byte {
	n := len(hdr) + len(payload)
	if n > MaxULPDU || f.Markers && n > MaxULPDUMarkers {
		panic("iwarp/wire: ULPDU too large for an FPDU")
	}
	if f.Markers {
		return appendMarked(dst, f.CRC, off, n, hdr, payload)
	}
	dst, b := grow(dst, FPDULen(n))
	binary.BigEndian.PutUint16(b, uint16(n))
	copy(b[LengthFieldLen:], hdr)
	copy(b[LengthFieldLen+len(hdr):], payload)
	end := len(b) - CRCLen
	clear(b[LengthFieldLen+n : end])
	var c uint32
	if f.CRC {
		c = CRC(b[:end])
	}
	PutCRC(b[end:], c)
	return dst
}

// appendMarked writes an FPDU with markers. It walks the FPDU's parts in
// wire order, inserting a marker at each multiple of 512 octets and folding
// every octet before the CRC field (markers included) into the CRC.
func appendMarked(dst []byte, crcOn bool, off uint32, n int, hdr, payload []byte) []byte {
	dst, b := grow(dst, FramedLen(Framing{Markers: true}, off, n))
	w := markedWriter{b: b, start: off, off: off, crcOn: crcOn}
	var lf [LengthFieldLen]byte
	binary.BigEndian.PutUint16(lf[:], uint16(n))
	var zero [4]byte
	w.write(lf[:])
	w.write(hdr)
	w.write(payload)
	w.write(zero[:PadLen(n)])
	// A marker that falls between the pad and the CRC field precedes the
	// CRC and is covered by it.
	w.marker()
	var c [CRCLen]byte
	if crcOn {
		PutCRC(c[:], w.crc)
	}
	w.crcOn = false
	w.write(c[:])
	return dst
}

type markedWriter struct {
	b     []byte
	i     int
	start uint32 // stream offset of the FPDU
	off   uint32 // stream offset of b[i]
	crc   uint32
	crcOn bool
}

// marker writes a marker if one is due at the current offset.
func (w *markedWriter) marker() {
	if !atMarker(w.off) {
		return
	}
	m := Marker(w.b[w.i : w.i+MarkerLen])
	m.Encode(uint16(w.off - w.start))
	if w.crcOn {
		w.crc = UpdateCRC(w.crc, m)
	}
	w.i += MarkerLen
	w.off += MarkerLen
}

func (w *markedWriter) write(p []byte) {
	for len(p) > 0 {
		w.marker()
		k := copy(w.b[w.i:w.i+min(len(p), toMarker(w.off))], p)
		if w.crcOn {
			w.crc = UpdateCRC(w.crc, p[:k])
		}
		w.i += k
		w.off += uint32(k)
		p = p[k:]
	}
}
