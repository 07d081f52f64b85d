package wire

import (
	"bytes"
	"testing"
)

// captureSeeds returns, from every siw capture, the MPA frames, the
// ULPDUs, and the first octets of each stream direction after its MPA frame
// (with its framing).
func captureSeeds(f *testing.F) (frames, ulpdus [][]byte, streams []seedStream) {
	for _, path := range captureFiles(f) {
		for _, c := range mpaConns(f, path) {
			frames = append(frames, c.req, c.rep)
			for dir := 0; dir < 2; dir++ {
				s := c.streams[dir].data[c.off[dir]:]
				streams = append(streams, seedStream{s[:min(len(s), 3000)], c.framing[dir]})
				res, _ := deframeChunks(c.framing[dir], MaxULPDU, [][]byte{s})
				for i, r := range res {
					if i < 8 {
						ulpdus = append(ulpdus, []byte(r.ulpdu))
					}
				}
			}
		}
	}
	return frames, ulpdus, streams
}

type seedStream struct {
	b  []byte
	fr Framing
}

func framingOf(flags byte) Framing { return Framing{CRC: flags&1 != 0, Markers: flags&2 != 0} }

func flagsOf(fr Framing) byte {
	var f byte
	if fr.CRC {
		f |= 1
	}
	if fr.Markers {
		f |= 2
	}
	return f
}

// FuzzMPAFrame: ParseMPAFrame never panics; a frame it accepts re-encodes
// to the same octets, and every proper prefix of it is ErrIncomplete.
func FuzzMPAFrame(f *testing.F) {
	frames, _, _ := captureSeeds(f)
	for _, b := range frames {
		f.Add([]byte(b))
	}
	f.Add([]byte(MPAKeyReply + "\x20\x01\x00\x03abc"))
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, n, err := ParseMPAFrame(b)
		if err != nil {
			if _, ok := err.(Error); !ok || n != 0 {
				t.Fatalf("error %v (%T), n %d", err, err, n)
			}
			return
		}
		if n != MPAHeaderLen+fr.PDLength() || n > MPAHeaderLen+MPAMaxPrivate {
			t.Fatalf("consumed %d for PD_Length %d", n, fr.PDLength())
		}
		fl := fr.Fields()
		out, err := AppendMPAFrame(nil, &fl)
		if err != nil || !bytes.Equal(out, b[:n]) {
			t.Fatalf("round trip: %x, %v", out, err)
		}
		for i := 0; i < n; i += 7 {
			if _, _, err := ParseMPAFrame(b[:i]); err != ErrIncomplete {
				t.Fatalf("prefix %d: %v", i, err)
			}
		}
	})
}

// FuzzDeframer: whatever the octets, framing and cuts, the deframer never
// panics, never holds more than one FPDU, returns ULPDUs within the limit,
// and gives the same FPDUs however the stream is cut.
func FuzzDeframer(f *testing.F) {
	_, _, streams := captureSeeds(f)
	for i, s := range streams {
		f.Add(s.b, flagsOf(s.fr), uint16(i*37+1), uint16(1500))
	}
	for _, fr := range framings {
		f.Add(testStream(f, fr)[:2000], flagsOf(fr), uint16(13), uint16(MaxULPDU))
	}
	f.Fuzz(func(t *testing.T, b []byte, flags byte, cut uint16, maxULPDU uint16) {
		fr := framingOf(flags)
		maxU := int(maxULPDU)
		whole, errWhole := deframeChunks(fr, maxU, [][]byte{b})
		var chunks [][]byte
		step := 1 + int(cut)%97
		for p := b; len(p) > 0; {
			n := min(len(p), step)
			chunks = append(chunks, p[:n])
			p = p[n:]
			step = 1 + (step*31+int(cut))%211
		}
		cutRes, errCut := deframeChunks(fr, maxU, chunks)
		if errWhole != errCut || len(whole) != len(cutRes) {
			t.Fatalf("whole: %d FPDUs %v; cut: %d FPDUs %v", len(whole), errWhole, len(cutRes), errCut)
		}
		off := uint32(0)
		for i := range whole {
			if whole[i] != cutRes[i] {
				t.Fatalf("FPDU %d differs", i)
			}
			g := whole[i]
			if len(g.ulpdu) > maxU || g.off != off || len(g.pad) != PadLen(len(g.ulpdu)) {
				t.Fatalf("FPDU %d: %d octets at %d (expected %d)", i, len(g.ulpdu), g.off, off)
			}
			if g.crcOK && (fr.CRC || g.crc == 0) && g.pad == string(make([]byte, len(g.pad))) {
				// A clean FPDU re-encodes to the octets it came from, but
				// for what the receiver ignores: the markers' reserved
				// half and FPDUPTR low bits (and so the CRC over them).
				out := AppendFPDU(nil, fr, g.off, []byte(g.ulpdu), nil)
				in := b[g.off : int(g.off)+g.wireLen]
				for j := range out {
					inMarker := fr.Markers && (g.off+uint32(j))%MarkerInterval < MarkerLen
					inCRC := fr.CRC && fr.Markers && j >= len(out)-CRCLen
					if out[j] != in[j] && !inMarker && !inCRC {
						t.Fatalf("FPDU %d re-encoded differs at %d\n got %x\nwant %x", i, j, out, in)
					}
				}
			}
			off += uint32(g.wireLen)
		}
		d := NewDeframer(fr, maxU)
		for p := b; len(p) > 0; {
			_, n, err := d.Next(p[:min(len(p), 100)])
			if err != nil && err != ErrIncomplete {
				break
			}
			p = p[n:]
			if d.Buffered() > FramedLen(fr, 0, maxU)+2*MarkerLen || cap(d.buf) > FPDULen(maxU) {
				t.Fatalf("holds %d octets (cap %d) for max ULPDU %d", d.Buffered(), cap(d.buf), maxU)
			}
		}
	})
}

// FuzzSegment: Segment.Decode never panics; a segment it accepts has
// readable headers and re-encodes to the same octets; errors map to
// Terminate codes.
func FuzzSegment(f *testing.F) {
	_, ulpdus, _ := captureSeeds(f)
	for _, b := range ulpdus {
		f.Add(b)
	}
	for _, op := range validOpcodes() {
		h := testHeaders(op)
		f.Add(AppendSegment(nil, &h, testPayload(op, 5)))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var s Segment
		if err := s.Decode(b); err != nil {
			e, ok := err.(Error)
			if !ok {
				t.Fatalf("non-code error %T", err)
			}
			if _, ok := e.Terminate(); !ok {
				t.Fatalf("%v has no Terminate code", e)
			}
			return
		}
		h := s.Headers()
		_ = s.Info().Name
		if tm := s.Terminate(); tm != nil {
			_ = tm.Fields()
			_ = tm.Code().String()
		}
		out := AppendSegment(nil, &h, s.Payload())
		if !bytes.Equal(out, b) {
			t.Fatalf("round trip\n got %x\nwant %x", out, b)
		}
	})
}

// FuzzTerminate: ParseTerminate never panics; what it accepts re-encodes to
// the same octets and its offending headers are readable.
func FuzzTerminate(f *testing.F) {
	f.Add(testPayload(OpTerminate, 0))
	f.Add([]byte{0x02, 0x02, 0x00, 0x00})
	h := testHeaders(OpWrite)
	w := AppendSegment(nil, &h, nil)
	f.Add(AppendTerminate(nil, &TermFields{Code: TermDDPTaggedBaseBounds, M: true, D: true, DDPSegLen: 14, DDPHeader: w}))
	f.Fuzz(func(t *testing.T, b []byte) {
		tm, err := ParseTerminate(b)
		if err != nil {
			return
		}
		fl := tm.Fields()
		if TermLen(&fl) != len(b) {
			t.Fatalf("TermLen %d for %d octets", TermLen(&fl), len(b))
		}
		if out := AppendTerminate(nil, &fl); !bytes.Equal(out, b) {
			t.Fatalf("round trip %x", out)
		}
		_ = tm.Code().String()
		if d := tm.DDPHeader(); d != nil {
			_ = d.Fields()
		}
	})
}
