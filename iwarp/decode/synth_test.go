package decode

import (
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/rnic/rnic/iwarp/wire"
)

// mpaConn is a synthetic MPA connection: the client's and the server's
// FPDU streams (after their MPA frames) and where each FPDU starts.
type mpaConn struct {
	c        *tconn
	req, rep []byte
	stream   [2][]byte
	starts   [2][]int
	framing  [2]wire.Framing
}

// newMPAConn negotiates as asked and builds both FPDU streams.
func newMPAConn(t testing.TB, crc, markers bool, cmsgs, smsgs []msg) *mpaConn {
	m := &mpaConn{c: newTConn("10.0.0.1:40000", "10.0.0.2:7174", 1000, 5000)}
	m.req, m.rep = mpaFrame(t, false, crc, markers), mpaFrame(t, true, false, markers)
	m.framing[0], m.framing[1] = wire.Negotiate(wire.MPAFrame(m.req), wire.MPAFrame(m.rep))
	m.stream[0], m.starts[0] = fpduStream(m.framing[0], cmsgs)
	m.stream[1], m.starts[1] = fpduStream(m.framing[1], smsgs)
	return m
}

// clientMsgs and serverMsgs cover every kind of RDMAP header.
func clientMsgs() []msg {
	return []msg{
		send(1, 16),
		{h: wire.Headers{DDP: wire.DDPFields{Last: true, Opcode: wire.OpReadRequest, QN: wire.QNReadRequest, MSN: 1},
			ReadRequest: wire.ReadRequestFields{SinkSTag: 0x1100, SinkTO: 0x7f0000001000, Size: 64, SourceSTag: 0x2200, SourceTO: 0x5000}}},
		write(0x3300, 0x9000, 100),
		{h: wire.Headers{DDP: wire.DDPFields{Opcode: wire.OpSendSEInvalidate, QN: wire.QNSend, MSN: 2, RsvdULP: 0x4400}}, payload: []byte("x")},
		{h: wire.Headers{DDP: wire.DDPFields{Last: true, Opcode: wire.OpSendSEInvalidate, QN: wire.QNSend, MSN: 2, MO: 1, RsvdULP: 0x4400}}, payload: []byte("yz")},
		{h: wire.Headers{DDP: wire.DDPFields{Last: true, Opcode: wire.OpAtomicRequest, QN: wire.QNReadRequest, MSN: 2},
			AtomicRequest: wire.AtomicRequestFields{Op: wire.AtomicCmpSwap, RequestID: 7, STag: 0x5500, TO: 0x8, AddSwapData: 1, AddSwapMask: ^uint64(0), CompareData: 2, CompareMask: ^uint64(0)}}},
		{h: wire.Headers{DDP: wire.DDPFields{Last: true, Opcode: wire.OpImmediateSE, QN: wire.QNSend, MSN: 3}, Immediate: 0x0102030405060708}},
	}
}

func serverMsgs() []msg {
	return []msg{
		{h: wire.Headers{DDP: wire.DDPFields{Last: true, Opcode: wire.OpReadResponse, STag: 0x1100, TO: 0x7f0000001000}}, payload: make([]byte, 64)},
		{h: wire.Headers{DDP: wire.DDPFields{Last: true, Opcode: wire.OpAtomicResponse, QN: wire.QNAtomicResponse, MSN: 1},
			AtomicResponse: wire.AtomicResponseFields{RequestID: 7, OriginalValue: 2}}},
		{h: wire.Headers{DDP: wire.DDPFields{Last: true, Opcode: wire.OpTerminate, QN: wire.QNTerminate, MSN: 1}},
			term: &wire.TermFields{Code: wire.TermRDMAPInvalidSTag, M: true, D: true, R: false, DDPSegLen: 100,
				DDPHeader: wire.AppendHeaders(nil, &wire.Headers{DDP: wire.DDPFields{Last: true, Opcode: wire.OpWrite, STag: 0x3300, TO: 0x9000}})}},
	}
}

// wantLines is what the standard connection gives (bare).
var wantLines = []string{
	"10.0.0.1:40000 > 10.0.0.2:7174 MPA Request rev=2 flags=CS ird=16 ord=16 pd=6",
	"10.0.0.2:7174 > 10.0.0.1:40000 MPA Reply rev=2 flags=S ird=16 ord=16 pd=6",
	"10.0.0.1:40000 > 10.0.0.2:7174 Send qn=0 msn=1 mo=0 last payload=16 crc=ok",
	"10.0.0.1:40000 > 10.0.0.2:7174 RDMA Read Request qn=1 msn=1 mo=0 last sink_stag=0x1100 sink_to=0x7f0000001000 size=64 src_stag=0x2200 src_to=0x5000 payload=0 crc=ok",
	"10.0.0.1:40000 > 10.0.0.2:7174 RDMA Write stag=0x3300 to=0x9000 last payload=100 crc=ok",
	"10.0.0.1:40000 > 10.0.0.2:7174 Send with Solicited Event and Invalidate qn=0 msn=2 mo=0 inv_stag=0x4400 payload=1 crc=ok",
	"10.0.0.1:40000 > 10.0.0.2:7174 Send with Solicited Event and Invalidate qn=0 msn=2 mo=1 last inv_stag=0x4400 payload=2 crc=ok",
	"10.0.0.1:40000 > 10.0.0.2:7174 Atomic Request qn=1 msn=2 mo=0 last atomic=CmpSwap req_id=0x7 stag=0x5500 to=0x8 data=0x1 data_mask=0xffffffffffffffff cmp=0x2 cmp_mask=0xffffffffffffffff payload=0 crc=ok",
	"10.0.0.1:40000 > 10.0.0.2:7174 Immediate Data with Solicited Event qn=0 msn=3 mo=0 last imm=0x0102030405060708 payload=0 crc=ok",
	"10.0.0.2:7174 > 10.0.0.1:40000 RDMA Read Response stag=0x1100 to=0x7f0000001000 last payload=64 crc=ok",
	"10.0.0.2:7174 > 10.0.0.1:40000 Atomic Response qn=3 msn=1 mo=0 last req_id=0x7 orig=0x2 payload=0 crc=ok",
	"10.0.0.2:7174 > 10.0.0.1:40000 Terminate qn=2 msn=1 mo=0 last term=0x0100 (RDMAP, remote protection error, invalid STag) m d seglen=100 payload=20 crc=ok",
}

// frames lays the connection out: handshake, the Request, the Reply, the
// client's FPDUs as segments of at most mss, then the server's, then FINs.
func (m *mpaConn) frames(mss int) [][]byte {
	c := m.c
	c.frames = nil
	c.next = [2]uint32{c.isn[0] + 1, c.isn[1] + 1}
	c.handshake()
	c.send(0, m.req, mss)
	c.send(1, m.rep, mss)
	c.send(0, m.stream[0], mss)
	c.send(1, m.stream[1], mss)
	c.fin(0)
	c.fin(1)
	return c.frames
}

func checkLines(t *testing.T, name string, got result, want []string) {
	t.Helper()
	if g := bareLines(got.lines); !slices.Equal(g, want) {
		t.Errorf("%s: got\n%s\nwant\n%s", name, strings.Join(g, "\n"), strings.Join(want, "\n"))
	}
}

// checkLinesByDir is checkLines for each direction on its own (the two
// interleave as the frames do).
func checkLinesByDir(t *testing.T, name string, got result, want []string) {
	t.Helper()
	dirs := func(ls []string) map[string][]string {
		m := map[string][]string{}
		for _, l := range ls {
			k, _, _ := strings.Cut(l, " > ")
			m[k] = append(m[k], l)
		}
		return m
	}
	g, w := dirs(bareLines(got.lines)), dirs(want)
	for k := range w {
		if !slices.Equal(g[k], w[k]) {
			t.Errorf("%s: from %s got\n%s\nwant\n%s", name, k, strings.Join(g[k], "\n"), strings.Join(w[k], "\n"))
		}
	}
	if len(g) != len(w) {
		t.Errorf("%s: %d directions", name, len(g))
	}
}

// TestSynthetic: every RDMAP message kind, at every segmentation (whole
// FPDUs, one octet per segment, random cuts), in order, reordered,
// duplicated and overlapping, gives the same lines.
func TestSynthetic(t *testing.T) {
	m := newMPAConn(t, true, false, clientMsgs(), serverMsgs())
	for _, mss := range []int{1460, 1, 3, 7, 64} {
		checkLines(t, "mss "+itoa(mss), decodeFrames(m.frames(mss)), wantLines)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 300 {
		frames := shuffleData(rng, resegment(rng, m.frames(1460)))
		got := decodeFrames(frames)
		checkLinesByDir(t, "random", got, wantLines)
		if t.Failed() {
			t.Fatalf("iteration %d", i)
		}
	}
}

// resegment re-cuts every data segment at random, with random overlaps
// and duplicates (same octets, as a retransmission carries).
func resegment(rng *rand.Rand, frames [][]byte) [][]byte {
	var out [][]byte
	for _, f := range frames {
		s, ok := parseTCP(f)
		if !ok || len(s.payload) == 0 {
			out = append(out, f)
			continue
		}
		for i := 0; i < len(s.payload); {
			n := 1 + rng.IntN(len(s.payload)-i)
			j := max(0, i-rng.IntN(4)) // overlap the previous piece
			out = append(out, retcp(f, uint32(j), s.payload[j:i+n]))
			if rng.IntN(5) == 0 {
				out = append(out, retcp(f, uint32(j), s.payload[j:i+n]))
			}
			i += n
		}
	}
	return out
}

// shuffleData swaps data segments of the same direction a few places
// apart, never before the handshake nor after a FIN, then makes every ACK
// acknowledge what the frames before it delivered in order (an ACK that
// covers octets not yet captured says the capture missed them).
func shuffleData(rng *rand.Rand, frames [][]byte) [][]byte {
	out := append([][]byte(nil), frames...)
	for i := 3; i+1 < len(out); i++ {
		a, _ := parseTCP(out[i])
		j := i + rng.IntN(4)
		if j >= len(out) {
			continue
		}
		b, _ := parseTCP(out[j])
		if len(a.payload) == 0 || len(b.payload) == 0 || a.flags&tcpFIN != 0 || b.flags&tcpFIN != 0 || a.src != b.src {
			continue
		}
		out[i], out[j] = out[j], out[i]
	}
	return fixAcks(out)
}

// fixAcks sets each non-SYN frame's acknowledgement number to the end of
// the other direction's in-order octets so far.
func fixAcks(frames [][]byte) [][]byte {
	isn := map[netip.AddrPort]uint32{}
	segs := map[netip.AddrPort][][2]uint32{} // [start, end) offsets
	contig := func(a netip.AddrPort) uint32 {
		end := uint32(0)
		for grown := true; grown; {
			grown = false
			for _, s := range segs[a] {
				if s[0] <= end && s[1] > end {
					end, grown = s[1], true
				}
			}
		}
		return end
	}
	out := make([][]byte, len(frames))
	for i, f := range frames {
		s, _ := parseTCP(f)
		out[i] = f
		if s.flags&tcpSYN != 0 {
			isn[s.src] = s.seq
			continue
		}
		if n, ok := isn[s.src]; ok && len(s.payload) > 0 {
			off := s.seq - n - 1
			segs[s.src] = append(segs[s.src], [2]uint32{off, off + uint32(len(s.payload))})
		}
		if n, ok := isn[s.dst]; ok && s.flags&tcpACK != 0 {
			out[i] = tcpFrame(s.src, s.dst, s.seq, n+1+contig(s.dst), s.flags, s.payload, s.vlan)
		}
	}
	return out
}

// TestCRC: a changed payload octet makes its FPDU crc=BAD, and only it;
// CRC off shows crc=off and never bad.
func TestCRC(t *testing.T) {
	m := newMPAConn(t, true, false, []msg{send(1, 40), send(2, 40), send(3, 40)}, nil)
	m.stream[0][m.starts[0][1]+30] ^= 1
	got := decodeFrames(m.frames(1460))
	if got.fpdus != 3 || got.crcBad != 1 || got.unknowns != 0 || !strings.HasSuffix(got.lines[3], "msn=2 mo=0 last payload=40 crc=BAD") {
		t.Errorf("%+v", got)
	}
	m = newMPAConn(t, false, false, []msg{send(1, 40)}, nil)
	m.stream[0][len(m.stream[0])-1] ^= 1 // the CRC field
	if got := decodeFrames(m.frames(1460)); got.crcBad != 0 || !strings.HasSuffix(got.lines[2], "crc=off") {
		t.Errorf("%+v", got)
	}
}

// TestBrokenFPDU: an FPDU whose ULPDU does not decode is one unknown; the
// FPDUs after it decode (its CRC vouches for the framing, or without CRC
// the next FPDU is found right after it).
func TestBrokenFPDU(t *testing.T) {
	for _, crc := range []bool{true, false} {
		m := newMPAConn(t, crc, false, []msg{send(1, 40), send(2, 40), send(3, 40)}, nil)
		m.stream[0][m.starts[0][1]+3] |= 0x0f // reserved RDMAP opcode 15
		if crc {                              // recompute the CRC: a sender's bug, not damage
			s, e := m.starts[0][1], m.starts[0][2]
			wire.PutCRC(m.stream[0][e-4:], wire.CRC(m.stream[0][s:e-4]))
		}
		got := decodeFrames(m.frames(1460))
		want := "unknown: iwarp rdmap_bad_opcode seq=" + itoa(len(m.req)+m.starts[0][1]+1) + " ulpdu=58 ctl=0x414f crc=ok"
		if !crc {
			want = strings.Replace(want, "crc=ok", "crc=off", 1)
		}
		if got.fpdus != 2 || got.unknowns != 1 || got.crcBad != 0 || !strings.HasSuffix(got.lines[3], want) {
			t.Errorf("crc %v: %+v", crc, got)
		}
	}
}

// TestBadLength: a damaged ULPDU_Length without CRC makes an FPDU swallow
// the start of the next one; what follows does not decode (one unknown)
// and decoding resumes at the next segment start.
func TestBadLength(t *testing.T) {
	var msgs []msg
	for i := range 6 {
		msgs = append(msgs, send(uint32(i+1), 40))
	}
	m := newMPAConn(t, false, false, msgs, nil)
	fl := m.starts[0][1]
	m.stream[0][fl+1] += 16 // FPDU 2 now ends 16 octets into FPDU 3
	got := decodeFrames(m.frames(fl))
	// FPDU 2 decodes (a longer Send); at FPDU 3 + 16 a zero ULPDU_Length
	// (its MO field) makes an 8-octet FPDU that does not decode; FPDU 4
	// starts the next segment.
	if got.fpdus != 5 || got.unknowns != 1 || got.reasons[0] != "truncated" ||
		!strings.HasSuffix(got.lines[3], "msn=2 mo=0 last payload=56 crc=off") ||
		!strings.HasSuffix(got.lines[4], "unknown: iwarp truncated seq="+itoa(len(m.req)+2*fl+16+1)+" ulpdu=0 crc=off") ||
		!strings.HasSuffix(got.lines[5], "msn=4 mo=0 last payload=40 crc=off") {
		t.Errorf("%s", strings.Join(got.lines, "\n"))
	}
}

// TestGap: a TCP segment missing from the capture is one tcp_gap unknown;
// decoding resumes at the next segment that starts with an FPDU.
func TestGap(t *testing.T) {
	for _, crc := range []bool{true, false} {
		var msgs []msg
		for i := range 6 {
			msgs = append(msgs, send(uint32(i+1), 100))
		}
		m := newMPAConn(t, crc, false, msgs, nil)
		fl := m.starts[0][1] // FPDU size
		frames := m.frames(fl)
		// Frames: SYN, SYN-ACK, ACK, Request, Reply, FPDU 1..6, FINs.
		frames = slices.Delete(frames, 7, 8) // FPDU 3
		got := decodeFrames(frames)
		if got.fpdus != 5 || got.unknowns != 1 || got.reasons[0] != ReasonGap ||
			!strings.HasSuffix(got.lines[4], "unknown: iwarp tcp_gap seq="+itoa(len(m.req)+2*fl+1)+" missing="+itoa(fl)) {
			t.Errorf("crc %v: %+v", crc, got)
		}
		// A segment cut in the middle of an FPDU: the rest of that FPDU
		// is skipped until a segment starts with one.
		frames = m.frames(fl / 2)
		frames = slices.Delete(frames, 8, 9) // the second half of FPDU 2
		got = decodeFrames(frames)
		if got.fpdus != 5 || got.unknowns != 1 || got.reasons[0] != ReasonGap {
			t.Errorf("crc %v, half: %+v", crc, got)
		}
	}
}

func itoa(i int) string { return string(appendInt(nil, i)) }

func appendInt(b []byte, i int) []byte {
	if i >= 10 {
		b = appendInt(b, i/10)
	}
	return append(b, byte('0'+i%10))
}

// TestTruncated: a stream that ends inside an FPDU (capture cut, FIN or
// RST) reports it once; one that ends inside the MPA frame too.
func TestTruncated(t *testing.T) {
	m := newMPAConn(t, true, false, []msg{send(1, 40), send(2, 40)}, nil)
	frames := m.frames(1460)
	// Frames: SYN, SYN-ACK, ACK, Request, Reply, client FPDUs (one segment), FINs.
	s, _ := parseTCP(frames[5])
	frames[5] = retcp(frames[5], 0, s.payload[:len(s.payload)-10])
	for name, fs := range map[string][][]byte{
		"end of capture": frames[:6],
		"fin":            frames,
		"rst":            append(slices.Clone(frames[:6]), m.c.frame(0, m.c.next[0], tcpRST, nil)),
	} {
		got := decodeFrames(fs)
		want := "unknown: iwarp incomplete_fpdu seq=" + itoa(len(m.req)+len(m.stream[0])/2+1) + " have=" + itoa(len(m.stream[0])/2-10)
		if got.fpdus != 1 || got.unknowns != 1 || !strings.HasSuffix(got.lines[len(got.lines)-1], want) {
			t.Errorf("%s: %+v", name, got)
		}
	}
	// Inside the Request.
	c := newTConn("10.0.0.1:40000", "10.0.0.2:7174", 1, 2)
	c.handshake()
	c.send(0, m.req[:18], 1460)
	if got := decodeFrames(c.frames); got.unknowns != 1 || got.reasons[0] != ReasonIncompleteMPA {
		t.Errorf("request: %+v", got)
	}
	// A snap length that cut a segment: a gap at its end (and no segment
	// follows to resume at).
	frames = m.frames(1460)
	full := frames[5]
	s, _ = parseTCP(full)
	frames[5] = full[:len(full)-len(s.payload)+50]
	if got := decodeFrames(frames); got.fpdus != 0 || got.unknowns != 1 || got.reasons[0] != ReasonGap ||
		!strings.HasSuffix(got.lines[2], "tcp_gap seq="+itoa(len(m.req)+51)+" missing="+itoa(len(s.payload)-50)) {
		t.Errorf("snap length: %+v", got)
	}
}

// TestNotMPA: connections that do not start with MPA, and one whose start
// was not captured, give nothing.
func TestNotMPA(t *testing.T) {
	c := newTConn("10.0.0.1:40000", "10.0.0.2:22", 1, 2)
	c.handshake()
	c.send(1, []byte("SSH-2.0-OpenSSH_9.2\r\n"), 1460)
	c.send(0, []byte("SSH-2.0-OpenSSH_9.2\r\n"), 1460)
	c.send(0, make([]byte, 5000), 1460)
	c.fin(0)
	if got := decodeFrames(c.frames); len(got.lines) != 0 {
		t.Errorf("ssh: %v", got.lines)
	}
	// An MPA connection without its handshake.
	m := newMPAConn(t, true, false, clientMsgs(), serverMsgs())
	if got := decodeFrames(m.frames(1460)[3:]); len(got.lines) != 0 {
		t.Errorf("joined late: %v", got.lines)
	}
	// Nor the Request without the SYN and the SYN-ACK.
	if got := decodeFrames(m.frames(1460)[5:]); len(got.lines) != 0 {
		t.Errorf("joined later: %v", got.lines)
	}
}

// TestHandshakeFramesMissing: the SYN or the SYN-ACK alone is enough.
func TestHandshakeFramesMissing(t *testing.T) {
	m := newMPAConn(t, true, false, clientMsgs(), serverMsgs())
	for _, drop := range []int{0, 1} {
		frames := slices.Delete(m.frames(1460), drop, drop+1)
		checkLines(t, "drop "+itoa(drop), decodeFrames(frames), wantLines)
	}
}

// TestSetupProblems: the ways MPA setup goes wrong.
func TestSetupProblems(t *testing.T) {
	req, rep := mpaFrame(t, false, false, false), mpaFrame(t, true, false, false)
	rej := slices.Clone(rep)
	rej[16] |= wire.MPAFlagReject
	f1, _ := fpduStream(wire.Framing{}, []msg{send(1, 10)})
	for _, c := range []struct {
		name         string
		client       [][]byte
		server       [][]byte
		mpa, unknown int
		reasons      []string
	}{
		{"not a reply", [][]byte{req, f1}, [][]byte{[]byte("HTTP/1.1 400 Bad Request\r\n\r\n")}, 1, 2,
			[]string{ReasonBadKey, ReasonNotNegotiated}},
		{"two requests", [][]byte{req}, [][]byte{req}, 2, 1, []string{ReasonNotReply}},
		{"rejected", [][]byte{req, f1}, [][]byte{rej}, 2, 1, []string{ReasonRejected}},
		{"rejected quietly", [][]byte{req}, [][]byte{rej}, 2, 0, nil},
		{"no reply", [][]byte{req, f1}, nil, 1, 1, []string{ReasonNotNegotiated}},
		{"private data too long", [][]byte{append([]byte(wire.MPAKeyRequest), 0x40, 1, 0x10, 0)}, nil, 0, 1,
			[]string{"mpa_private_data_too_long"}},
		{"reply first, request late", [][]byte{req, f1}, [][]byte{rep, f1}, 2, 0, nil},
	} {
		m := newTConn("10.0.0.1:40000", "10.0.0.2:7174", 1, 2)
		m.handshake()
		if c.name == "reply first, request late" {
			// The Reply's segment is captured before the Request's.
			m.add(m.seg(1, rep))
			m.add(m.seg(0, req))
			m.add(m.seg(0, f1))
			m.add(m.seg(1, f1))
		} else {
			for _, p := range c.client {
				m.send(0, p, 1460)
			}
			for _, p := range c.server {
				m.send(1, p, 1460)
			}
		}
		got := decodeFrames(m.frames)
		if got.mpa != c.mpa || got.unknowns != c.unknown || !slices.Equal(got.reasons, c.reasons) {
			t.Errorf("%s: %+v", c.name, got)
		}
	}
}

// TestEarlyFPDUs: FPDUs sent with the Request, before the Reply, decode
// once it arrives.
func TestEarlyFPDUs(t *testing.T) {
	m := newMPAConn(t, true, false, clientMsgs(), serverMsgs())
	c := m.c
	c.handshake()
	c.send(0, append(slices.Clone(m.req), m.stream[0]...), 1460)
	c.send(1, append(slices.Clone(m.rep), m.stream[1]...), 1460)
	checkLines(t, "early", decodeFrames(c.frames), wantLines)
}

// TestMarkers: with markers negotiated both ways, FPDUs decode whatever
// the segmentation; a gap ends the direction (one unknown).
func TestMarkers(t *testing.T) {
	var msgs []msg
	for i := range 20 {
		msgs = append(msgs, send(uint32(i+1), 100+i*7))
	}
	m := newMPAConn(t, true, true, msgs, serverMsgs())
	if !m.framing[0].Markers || !m.framing[1].Markers {
		t.Fatal("markers not negotiated")
	}
	want := bareLines(decodeFrames(m.frames(1460)).lines)
	if len(want) != 2+20+3 || strings.Contains(strings.Join(want, "\n"), "unknown") {
		t.Fatalf("%s", strings.Join(want, "\n"))
	}
	for _, mss := range []int{1, 5, 333} {
		checkLines(t, "markers", decodeFrames(m.frames(mss)), want)
	}
	frames := m.frames(200)
	frames = slices.Delete(frames, 7, 8) // the third client segment: FPDUs 3 to 20 are lost
	if got := decodeFrames(frames); got.unknowns != 1 || got.reasons[0] != ReasonGap || got.fpdus != 3+3 {
		t.Errorf("gap: %+v", got)
	}
}

// TestVLANIPv6: the endpoints and the VLAN show.
func TestVLANIPv6(t *testing.T) {
	m := newMPAConn(t, false, false, []msg{send(1, 10)}, nil)
	m.c = newTConn("[fd00::1]:40000", "[fd00::2]:7174", 0xfffffff0, 0xffffffff) // sequence numbers wrap
	m.c.vlan = 12
	got := decodeFrames(m.frames(7))
	want := "[fd00::1]:40000 > [fd00::2]:7174 vlan=12 Send qn=0 msn=1 mo=0 last payload=10 crc=off"
	if got.fpdus != 1 || got.unknowns != 0 || bare(got.lines[2]) != want {
		t.Errorf("%+v", got)
	}
}

// TestPortReuse: a second connection on the same 4-tuple decodes anew.
func TestPortReuse(t *testing.T) {
	m := newMPAConn(t, false, false, []msg{send(1, 10)}, nil)
	frames := m.frames(1460)
	m.c.isn = [2]uint32{77777, 99999}
	frames = append(frames, m.frames(1460)...)
	if got := decodeFrames(frames); got.mpa != 4 || got.fpdus != 2 || got.unknowns != 0 {
		t.Errorf("%+v", got)
	}
	// Without FINs in between: the new SYN ends the old connection.
	m.c.isn = [2]uint32{1000, 5000}
	f1 := m.frames(1460)
	m.c.isn = [2]uint32{77777, 99999}
	f2 := m.frames(1460)
	frames = append(f1[:len(f1)-2], f2...)
	if got := decodeFrames(frames); got.mpa != 4 || got.fpdus != 2 || got.unknowns != 0 {
		t.Errorf("no FIN: %+v", got)
	}
}

// TestJSON: the JSON objects carry the type and the fields.
func TestJSON(t *testing.T) {
	m := newMPAConn(t, true, false, clientMsgs(), serverMsgs())
	d := New()
	var out []string
	emit := func(r *Record) {
		b, err := AppendJSON(nil, "f.pcap", r)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	for i, f := range m.frames(1460) {
		d.Frame(f, i+1, 0, emit)
	}
	d.Flush(emit)
	for i, want := range map[int]string{
		0:  `{"type":"mpa","file":"f.pcap","frame":4,"time":0.000000,"src":"10.0.0.1:40000","dst":"10.0.0.2:7174","seq":1,"mpa":"request","rev":2,"m":false,"c":true,"r":false,"s":true,"res":0,"ird":16,"ord":16,"pd_len":6}`,
		3:  `{"type":"iwarp","file":"f.pcap","frame":6,"time":0.000000,"src":"10.0.0.1:40000","dst":"10.0.0.2:7174","seq":67,"fpdu_len":52,"opcode":1,"op":"RDMA Read Request","tagged":false,"last":true,"qn":1,"msn":1,"mo":0,"read_request":{"sink_stag":"0x1100","sink_to":"0x7f0000001000","size":64,"src_stag":"0x2200","src_to":"0x5000"},"payload":0,"pad":0,"crc":"ok","crc_wire":"0x`,
		11: `{"type":"iwarp","file":"f.pcap","frame":7,"time":0.000000,"src":"10.0.0.2:7174","dst":"10.0.0.1:40000","seq":147,"fpdu_len":44,"opcode":7,"op":"Terminate","tagged":false,"last":true,"qn":2,"msn":1,"mo":0,"terminate":{"code":"0x0100","text":"RDMAP, remote protection error, invalid STag","m":true,"d":true,"r":false,"seglen":100},"payload":20,"pad":0,"crc":"ok","crc_wire":"0x`,
	} {
		if !strings.HasPrefix(out[i], want) {
			t.Errorf("object %d:\n got %s\nwant %s", i, out[i], want)
		}
	}
}

// TestManyConnections: more connections than the decoder tracks at once
// are handled (the oldest non-MPA ones end), and the MPA one still decodes.
func TestManyConnections(t *testing.T) {
	m := newMPAConn(t, false, false, []msg{send(1, 10), send(2, 10)}, nil)
	mf := m.frames(m.starts[0][1])
	frames := slices.Clone(mf[:6]) // the MPA connection up to its first FPDU
	for i := range maxConns + 10 {
		c := newTConn("10.1.0.1:"+itoa(1024+i%60000), "10.1.0.2:"+itoa(1+i/60000), uint32(i), uint32(i))
		c.handshake()
		c.send(0, []byte("GET / HTTP/1.1\r\n"), 1460)
		frames = append(frames, c.frames...)
	}
	frames = append(frames, mf[6:]...)
	if got := decodeFrames(frames); got.fpdus != 2 || got.unknowns != 0 {
		t.Errorf("%+v", got)
	}
}
