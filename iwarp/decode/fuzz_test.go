package decode

import (
	"net/netip"
	"testing"
	"time"

	"github.com/rnic/rnic/iwarp/wire"
)

// FuzzDecoder: whatever the streams (MPA frames or not, FPDUs or garbage),
// however TCP cut, reordered, duplicated, overlapped or lost them, the
// decoder never panics, emits well-formed records, and holds no more than
// its bounds.
//
// flags: bit 0 the Request asks for CRCs, bit 1 the Request and bit 2 the
// Reply ask for markers, bit 3 the streams are sent as given (no MPA frames
// in front), bit 4 the Reply rejects, bit 5 IPv6, bit 6 no FINs. Each octet
// of cuts makes one segment: its low 5 bits the length (1-32 octets, or
// 200 and 1400 for 30 and 31), bit 5 the direction, bits 6-7 what happens
// to it (as is, sent twice, lost, or overlapping the previous one).
func FuzzDecoder(f *testing.F) {
	m := newMPAConn(f, true, false, clientMsgs(), serverMsgs())
	f.Add(byte(1), []byte{0x1f, 0x3f, 0x1f, 0x3f, 0x1f, 0x3f}, m.stream[0], m.stream[1])
	f.Add(byte(0), []byte{3, 0x23, 7, 0x27, 0x41, 0x61, 0x81, 0xc1, 0x1e, 0x3e}, m.stream[0], m.stream[1])
	f.Add(byte(6), []byte{0x1e, 0x3e, 0x5e, 0x7e, 0x9e, 0xbe}, m.stream[0], m.stream[1])
	f.Add(byte(8), []byte{0x10, 0x30}, []byte(wire.MPAKeyRequest+"\x40\x02\x00\x04\x00\x10\x00\x10"), []byte(wire.MPAKeyReply+"\x20\x02"))
	for _, path := range []string{"../../testdata/captures/siw-rping.pcap", "../../testdata/captures/siw-rping-mpacrc.pcap"} {
		var s [2][]byte
		for _, fr := range readPcap(f, path) {
			if seg, ok := parseTCP(fr); ok && len(seg.payload) > 0 {
				i := 0
				if seg.src.Port() == 7174 {
					i = 1
				}
				s[i] = append(s[i], seg.payload...)
			}
		}
		f.Add(byte(8), []byte{0x1f, 0x3f, 0x1f, 0x3f, 0x1f, 0x3f, 0x1f, 0x3f, 0x1f, 0x3f}, s[0][:min(len(s[0]), 2000)], s[1][:min(len(s[1]), 2000)])
	}
	f.Fuzz(func(t *testing.T, flags byte, cuts, client, server []byte) {
		frames := fuzzFrames(t, flags, cuts, client, server)
		d := New()
		n := 0
		emit := func(r *Record) {
			n++
			checkRecord(t, r)
		}
		for i, fr := range frames {
			d.Frame(fr, i+1, time.Duration(i), emit)
			checkBounds(t, d)
		}
		d.Flush(emit)
		if len(d.conns) != 0 || d.n != 0 || d.ooo != 0 {
			t.Fatalf("after Flush: %d conns, %d held", d.n, d.ooo)
		}
	})
}

func fuzzFrames(t testing.TB, flags byte, cuts, client, server []byte) [][]byte {
	c := newTConn("10.0.0.1:40000", "10.0.0.2:7174", 0xfffff000, 0x7ffffff0)
	if flags&0x20 != 0 {
		c = newTConn("[fd00::1]:40000", "[fd00::2]:7174", 0xfffff000, 0x7ffffff0)
	}
	streams := [2][]byte{client, server}
	if flags&8 == 0 {
		req := mpaFrame(t, false, flags&1 != 0, flags&2 != 0)
		rep := mpaFrame(t, true, false, flags&4 != 0)
		if flags&0x10 != 0 {
			rep[16] |= wire.MPAFlagReject
		}
		streams = [2][]byte{append(req, client...), append(rep, server...)}
	}
	c.handshake()
	var sent [2]int
	var prev [2][]byte // the previous segment's octets and where they start
	var prevOff [2]int
	for _, b := range cuts {
		side := int(b>>5) & 1
		n := int(b&0x1f) + 1
		switch n {
		case 31:
			n = 200
		case 32:
			n = 1400
		}
		s := streams[side][sent[side]:]
		n = min(n, len(s))
		if n == 0 {
			continue
		}
		p := s[:n]
		seq := c.next[side]
		switch b >> 6 {
		case 1: // twice
			c.add(c.frame(side, seq, tcpACK, p))
			c.add(c.frame(side, seq, tcpACK, p))
		case 2: // lost
		case 3: // overlapping the previous segment
			if prev[side] != nil {
				k := len(prev[side]) / 2
				q := append(append([]byte(nil), prev[side][k:]...), p...)
				c.add(c.frame(side, c.isn[side]+1+uint32(prevOff[side]+k), tcpACK, q))
				break
			}
			fallthrough
		default:
			c.add(c.frame(side, seq, tcpACK, p))
		}
		prev[side], prevOff[side] = p, sent[side]
		sent[side] += n
		c.next[side] += uint32(n)
	}
	if flags&0x40 == 0 {
		c.fin(0)
		c.fin(1)
	}
	return c.frames
}

// checkRecord: a record is one of the kinds, with sane fields, and formats.
func checkRecord(t *testing.T, r *Record) {
	switch r.Kind {
	case KindMPA:
		if len(r.MPA) < wire.MPAHeaderLen || r.Seq != 1 {
			t.Fatalf("MPA record %+v", r)
		}
	case KindFPDU:
		if !r.FPDU || r.Segment.Bytes() == nil || r.WireLen < wire.MinFPDULen {
			t.Fatalf("FPDU record %+v", r)
		}
	case KindUnknown:
		if r.Reason == "" || r.Reason == "error" || r.Reason == "unknown" || r.Bytes < 0 {
			t.Fatalf("unknown record %+v", r)
		}
	default:
		t.Fatalf("record of kind %d", r.Kind)
	}
	if r.Index < 1 || !r.Src.IsValid() || !r.Dst.IsValid() {
		t.Fatalf("record %+v", r)
	}
	AppendText(nil, r)
	if _, err := AppendJSON(nil, "", r); err != nil {
		t.Fatal(err)
	}
}

// checkBounds: what the decoder holds stays within its bounds.
func checkBounds(t *testing.T, d *Decoder) {
	if d.n > maxConns || len(d.conns) != 2*d.n || d.ooo > maxOOOTotal || d.ooo < 0 {
		t.Fatalf("%d conns (%d keys), %d out of order", d.n, len(d.conns), d.ooo)
	}
	total := 0
	seen := map[*conn]bool{}
	for _, c := range d.conns {
		if seen[c] {
			continue
		}
		seen[c] = true
		for _, h := range c.h {
			held := 0
			for _, s := range h.ooo {
				held += len(s.data)
			}
			total += held
			if held != h.oooBytes || held > maxOOOHalf || len(h.setup) > wire.MPAHeaderLen+wire.MPAMaxPrivate ||
				h.pendLen > maxPending || len(h.rs.buf) > 2*wire.FPDULen(wire.MaxULPDU)+65536 {
				t.Fatalf("held: ooo %d (%d), setup %d, pending %d, resync %d", held, h.oooBytes, len(h.setup), h.pendLen, len(h.rs.buf))
			}
			if !h.live() && (len(h.ooo) > 0 || h.setup != nil || h.pending != nil || h.rs.buf != nil) {
				t.Fatalf("a direction in state %d holds octets", h.st)
			}
		}
	}
	if total != d.ooo {
		t.Fatalf("out of order: %d held, %d counted", total, d.ooo)
	}
}

// FuzzParseTCP: any frame parses or not, without panic, and a payload is
// inside the frame.
func FuzzParseTCP(f *testing.F) {
	f.Add(tcpFrame(netip.MustParseAddrPort("10.0.0.1:1"), netip.MustParseAddrPort("10.0.0.2:2"), 1, 2, tcpACK, []byte("abc"), 5))
	f.Add(tcpFrame(netip.MustParseAddrPort("[fd00::1]:1"), netip.MustParseAddrPort("[fd00::2]:2"), 1, 2, tcpACK, []byte("abc"), -1))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, ok := parseTCP(b)
		if ok && (s.missing < 0 || len(s.payload) > len(b)) {
			t.Fatalf("%+v", s)
		}
	})
}
