package wire

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// testStream builds a stream of FPDUs of every opcode and pad, plus some
// larger ones, framed as fr.
func testStream(t testing.TB, fr Framing) []byte {
	t.Helper()
	var s []byte
	for i, op := range validOpcodes() {
		for _, n := range []int{0, 1, 2, 3, 700 + i} {
			if !op.Info().Payload && n > 0 {
				continue
			}
			h := testHeaders(op)
			s = AppendFPDU(s, fr, uint32(len(s)), AppendHeaders(nil, &h), testPayload(op, n))
		}
	}
	h := testHeaders(OpReadResponse)
	s = AppendFPDU(s, fr, uint32(len(s)), AppendHeaders(nil, &h), testPayload(OpReadResponse, 4000))
	return s
}

type got struct {
	ulpdu   string
	pad     string
	off     uint32
	wireLen int
	crc     uint32
	crcOK   bool
}

// deframeChunks feeds the chunks to a new deframer and returns what it
// found, and the final error (nil when the stream ended on an FPDU boundary).
func deframeChunks(fr Framing, max int, chunks [][]byte) ([]got, error) {
	d := NewDeframer(fr, max)
	var out []got
	for _, p := range chunks {
		for {
			r, n, err := d.Next(p)
			p = p[n:]
			if err == ErrIncomplete {
				break
			}
			if err != nil {
				return out, err
			}
			out = append(out, got{string(r.ULPDU), string(r.Pad), r.Off, r.WireLen, r.CRC, r.CRCOK})
		}
		if len(p) != 0 {
			panic("Next returned ErrIncomplete with octets left")
		}
	}
	if d.Buffered() != 0 {
		return out, ErrIncomplete
	}
	return out, nil
}

var framings = []Framing{{}, {CRC: true}, {Markers: true}, {CRC: true, Markers: true}}

// TestSegmentationTorture: the same stream, whole, in 1-octet pieces, split
// in two at every octet, and cut at random, gives the same FPDUs.
func TestSegmentationTorture(t *testing.T) {
	for _, fr := range framings {
		t.Run(fmt.Sprintf("crc=%v,markers=%v", fr.CRC, fr.Markers), func(t *testing.T) {
			s := testStream(t, fr)
			want, err := deframeChunks(fr, MaxULPDU, [][]byte{s})
			if err != nil {
				t.Fatal(err)
			}
			if len(want) != 37 {
				t.Fatalf("%d FPDUs, want 37", len(want))
			}
			off := 0
			for i, g := range want {
				if !g.crcOK || int(g.off) != off {
					t.Fatalf("FPDU %d: %+v at %d", i, g, off)
				}
				var seg Segment
				if err := seg.Decode([]byte(g.ulpdu)); err != nil {
					t.Fatalf("FPDU %d: %v", i, err)
				}
				off += g.wireLen
			}
			check := func(name string, chunks [][]byte) {
				t.Helper()
				res, err := deframeChunks(fr, MaxULPDU, chunks)
				if err != nil || len(res) != len(want) {
					t.Fatalf("%s: %d FPDUs, %v", name, len(res), err)
				}
				for i := range res {
					if res[i] != want[i] {
						t.Fatalf("%s: FPDU %d differs", name, i)
					}
				}
			}
			ones := make([][]byte, len(s))
			for i := range s {
				ones[i] = s[i : i+1]
			}
			check("1-octet pieces", ones)
			for k := 0; k <= len(s); k++ {
				check(fmt.Sprintf("split at %d", k), [][]byte{s[:k], s[k:]})
			}
			rng := rand.New(rand.NewPCG(1, 2))
			for range 200 {
				var chunks [][]byte
				for p := s; len(p) > 0; {
					n := min(len(p), 1+rng.IntN(1+rng.IntN(3000)))
					chunks = append(chunks, p[:n])
					p = p[n:]
				}
				check("random cuts", chunks)
			}
		})
	}
}

func TestDeframerViewsNoCopy(t *testing.T) {
	s := testStream(t, Framing{CRC: true})
	d := NewDeframer(Framing{CRC: true}, MaxULPDU)
	r, n, err := d.Next(s)
	if err != nil || &r.ULPDU[0] != &s[2] || n != r.WireLen {
		t.Fatalf("first FPDU not a view into the chunk: %v", err)
	}
	if d.buf != nil {
		t.Error("the fast path made a buffer")
	}
}

func TestDeframerErrors(t *testing.T) {
	h := testHeaders(OpSend)
	hdr := AppendHeaders(nil, &h)
	big := AppendFPDU(nil, Framing{}, 0, hdr, make([]byte, 2000))
	for _, chunks := range [][][]byte{{big}, {big[:1], big[1:]}} {
		if _, err := deframeChunks(Framing{}, 1500, chunks); err != ErrFPDUTooLong {
			t.Errorf("oversized ULPDU: %v", err)
		}
	}
	// A sticky error stays.
	d := NewDeframer(Framing{}, 100)
	if _, _, err := d.Next(big); err != ErrFPDUTooLong {
		t.Fatal(err)
	}
	small := AppendFPDU(nil, Framing{}, 0, hdr, nil)
	if _, n, err := d.Next(small); err != ErrFPDUTooLong || n != 0 || d.Err() != ErrFPDUTooLong {
		t.Errorf("not sticky: %d %v", n, err)
	}

	// A corrupted CRC is reported, not fatal; a CRC field is ignored when
	// CRCs are off.
	fr := Framing{CRC: true}
	s := append(AppendFPDU(nil, fr, 0, hdr, []byte("x")), AppendFPDU(nil, fr, 0, hdr, []byte("y"))...)
	s[len(small)] ^= 1
	for _, chunks := range [][][]byte{{s}, {s[:5], s[5:]}} {
		res, err := deframeChunks(fr, MaxULPDU, chunks)
		if err != nil || len(res) != 2 || res[0].crcOK || !res[1].crcOK {
			t.Errorf("bad CRC: %+v %v", res, err)
		}
	}
	if res, _ := deframeChunks(Framing{}, MaxULPDU, [][]byte{s}); !res[0].crcOK {
		t.Error("CRC checked although off")
	}

	// A marker whose FPDUPTR is wrong (in front of the FPDU, and inside).
	mk := Framing{Markers: true}
	m := AppendFPDU(nil, mk, 0, hdr, make([]byte, 1000))
	for _, at := range []int{3, 515} {
		bad := append([]byte(nil), m...)
		bad[at] ^= 4
		for _, chunks := range [][][]byte{{bad}, {bad[:1], bad[1:]}} {
			if _, err := deframeChunks(mk, MaxULPDU, chunks); err != ErrBadMarker {
				t.Errorf("marker octet %d corrupted: %v", at, err)
			}
		}
		// The two low bits and the reserved half are ignored.
		ok := append([]byte(nil), m...)
		ok[at] |= 3
		ok[at-3] = 0xFF
		if _, err := deframeChunks(mk, MaxULPDU, [][]byte{ok}); err != nil {
			t.Errorf("ignored marker bits at %d: %v", at, err)
		}
	}
	// A truncated stream leaves octets buffered.
	if _, err := deframeChunks(fr, MaxULPDU, [][]byte{s[:len(s)-1]}); err != ErrIncomplete {
		t.Errorf("truncated: %v", err)
	}
}

// TestDeframeZeroAlloc: deframing and decoding a stream cut into pieces,
// FPDUs whole or split, allocates nothing once the deframer's buffer exists.
func TestDeframeZeroAlloc(t *testing.T) {
	for _, fr := range framings {
		s := testStream(t, fr)
		var chunks [][]byte
		for p := s; len(p) > 0; {
			n := min(len(p), 1000)
			chunks = append(chunks, p[:n])
			p = p[n:]
		}
		d := NewDeframer(fr, MaxULPDU)
		var seg Segment
		count := 0
		run := func() {
			*d = Deframer{framing: d.framing, maxULPDU: d.maxULPDU, buf: d.buf}
			for _, p := range chunks {
				for {
					r, n, err := d.Next(p)
					p = p[n:]
					if err != nil {
						break
					}
					if seg.Decode(r.ULPDU) == nil {
						_ = seg.Headers()
						if t := seg.Terminate(); t != nil {
							_ = t.Fields()
						}
						count++
					}
				}
			}
		}
		run()
		if count != 37 {
			t.Fatalf("%+v: decoded %d", fr, count)
		}
		if a := testing.AllocsPerRun(100, run); a != 0 {
			t.Errorf("%+v: %v allocations per stream", fr, a)
		}
	}
	mpa := mustHex(t, siwRequest)
	term := testPayload(OpTerminate, 0)
	if a := testing.AllocsPerRun(100, func() {
		f, _, _ := ParseMPAFrame(mpa)
		_ = f.Fields()
		tm, _ := ParseTerminate(term)
		_ = tm.Fields()
	}); a != 0 {
		t.Errorf("MPA/Terminate parse: %v allocations", a)
	}
}

func BenchmarkDeframe(b *testing.B) {
	s := testStream(b, Framing{CRC: true})
	d := NewDeframer(Framing{CRC: true}, MaxULPDU)
	var seg Segment
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		d.off = 0
		for p := s; len(p) > 0; {
			r, n, err := d.Next(p)
			if err != nil {
				b.Fatal(err)
			}
			p = p[n:]
			_ = seg.Decode(r.ULPDU)
		}
	}
}
