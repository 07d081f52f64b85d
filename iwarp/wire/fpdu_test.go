package wire

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// refMarked inserts markers into the unmarked FPDU u the slow, obvious way
// (RFC 5044 §4.3): before each octet, if the stream is at a multiple of 512,
// a marker pointing back to the FPDU's first octet. The CRC, when on, is
// recomputed over every wire octet before the CRC field.
func refMarked(u []byte, off uint32, crc bool) []byte {
	var out []byte
	crcAt := -1
	for i, c := range u {
		if (off+uint32(len(out)))%512 == 0 {
			out = append(out, 0, 0, byte(len(out)>>8), byte(len(out)))
		}
		if i == len(u)-CRCLen {
			crcAt = len(out)
		}
		out = append(out, c)
	}
	if crc {
		PutCRC(out[crcAt:], CRC(out[:crcAt]))
	} else {
		PutCRC(out[crcAt:], 0)
	}
	return out
}

func TestPadLen(t *testing.T) {
	for n, want := range []int{2, 1, 0, 3, 2, 1, 0} {
		if PadLen(n) != want || FPDULen(n)%4 != 0 {
			t.Errorf("PadLen(%d) = %d, want %d", n, PadLen(n), want)
		}
	}
}

// TestFPDURoundTrip frames ULPDUs giving every pad, with and without CRC,
// with and without markers at every phase of the 512-octet marker cycle,
// and checks the encoder against the reference and the deframer against
// the encoder.
func TestFPDURoundTrip(t *testing.T) {
	payload := make([]byte, 1500)
	for i := range payload {
		payload[i] = byte(i)
	}
	for _, op := range validOpcodes() {
		h := testHeaders(op)
		hdr := AppendHeaders(nil, &h)
		sizes := []int{0, 1, 2, 3}
		if op.Info().Payload {
			sizes = append(sizes, 509, 510, 511, 512, 1400)
		} else {
			sizes = []int{0}
		}
		for _, n := range sizes {
			pay := testPayload(op, n)
			ulpdu := append(append([]byte(nil), hdr...), pay...)
			for _, crc := range []bool{false, true} {
				plain := AppendFPDU(nil, Framing{CRC: crc}, 0, hdr, pay)
				if len(plain) != FPDULen(len(ulpdu)) || len(plain)%4 != 0 {
					t.Fatalf("%v/%d: FPDU length %d", op, n, len(plain))
				}
				f, _, err := ParseFPDU(plain)
				if err != nil || !bytes.Equal(f.ULPDU(), ulpdu) || len(f.Pad()) != PadLen(len(ulpdu)) {
					t.Fatalf("%v/%d: ParseFPDU %v", op, n, err)
				}
				if crc && f.WireCRC() != f.ComputeCRC() || !crc && f.WireCRC() != 0 {
					t.Fatalf("%v/%d: CRC %08x", op, n, f.WireCRC())
				}
				for phase := uint32(0); phase < MarkerInterval; phase += 4 {
					off := 7*MarkerInterval + phase
					fr := Framing{CRC: crc, Markers: true}
					got := AppendFPDU([]byte("prefix"), fr, off, hdr, pay)[6:]
					want := refMarked(plain, off, crc)
					if !bytes.Equal(got, want) {
						t.Fatalf("%v/%d crc=%v phase %d: marked FPDU\n got %x\nwant %x", op, n, crc, phase, got, want)
					}
					if len(got) != FramedLen(fr, off, len(ulpdu)) {
						t.Fatalf("FramedLen %d, wrote %d", FramedLen(fr, off, len(ulpdu)), len(got))
					}
					d := NewDeframer(fr, MaxULPDU)
					d.off = off
					r, k, err := d.Next(got)
					if err != nil || k != len(got) || !bytes.Equal(r.ULPDU, ulpdu) || !r.CRCOK || r.Off != off || r.WireLen != len(got) {
						t.Fatalf("%v/%d crc=%v phase %d: deframed %v %d %+v", op, n, crc, phase, err, k, r)
					}
				}
			}
		}
	}
}

// TestMarkerPlacement pins the RFC 5044 §4.3 rules on a concrete stream: the
// first marker at stream offset 0 in front of the first FPDU (FPDUPTR 0),
// markers every 512 octets, FPDUPTR counted back to the FPDU's first octet.
func TestMarkerPlacement(t *testing.T) {
	fr := Framing{CRC: true, Markers: true}
	var stream []byte
	for i := 0; i < 3; i++ {
		pay := make([]byte, 600)
		h := testHeaders(OpWrite)
		stream = AppendFPDU(stream, fr, uint32(len(stream)), AppendHeaders(nil, &h), pay)
	}
	// FPDU 1: [0,4) marker, then 2+14+600+0 pad+4 = 620 octets with a
	// marker at 512 (FPDUPTR 512): it ends at 628.
	if ptr := binary.BigEndian.Uint32(stream[0:]); ptr != 0 {
		t.Errorf("first marker %08x", ptr)
	}
	if ptr := binary.BigEndian.Uint32(stream[512:]); ptr != 512 {
		t.Errorf("marker at 512 = %d", ptr)
	}
	if binary.BigEndian.Uint16(stream[4:]) != 614 {
		t.Errorf("first ULPDU_Length %d", binary.BigEndian.Uint16(stream[4:]))
	}
	// FPDU 2 starts at 628; the marker at 1024 points back 396 octets.
	if ptr := binary.BigEndian.Uint32(stream[1024:]); ptr != 1024-628 {
		t.Errorf("marker at 1024 = %d", ptr)
	}
	for m := 0; m < len(stream); m += 512 {
		if binary.BigEndian.Uint16(stream[m:]) != 0 {
			t.Errorf("marker at %d: reserved %x", m, stream[m:m+2])
		}
	}
}
