package decode

import (
	"encoding/binary"
	"errors"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/pcapgo"

	"github.com/rnic/rnic/iwarp/wire"
)

// tcpFrame builds an Ethernet (optionally 802.1Q-tagged) IPv4 or IPv6 TCP
// frame. Checksums are left zero: the decoder does not check them.
func tcpFrame(src, dst netip.AddrPort, seq, ack uint32, flags uint8, payload []byte, vlan int) []byte {
	b := make([]byte, 0, 100+len(payload))
	b = append(b, 2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1)
	if vlan >= 0 {
		b = binary.BigEndian.AppendUint16(b, etherTypeVLAN)
		b = binary.BigEndian.AppendUint16(b, uint16(vlan))
	}
	l4 := tcpLen + len(payload)
	if src.Addr().Is4() {
		b = binary.BigEndian.AppendUint16(b, etherTypeIPv4)
		b = append(b, 0x45, 0)
		b = binary.BigEndian.AppendUint16(b, uint16(ipv4Len+l4))
		b = append(b, 0, 0, 0x40, 0, 64, protoTCP, 0, 0)
		s, d := src.Addr().As4(), dst.Addr().As4()
		b = append(append(b, s[:]...), d[:]...)
	} else {
		b = binary.BigEndian.AppendUint16(b, etherTypeIPv6)
		b = append(b, 0x60, 0, 0, 0)
		b = binary.BigEndian.AppendUint16(b, uint16(l4))
		b = append(b, protoTCP, 64)
		s, d := src.Addr().As16(), dst.Addr().As16()
		b = append(append(b, s[:]...), d[:]...)
	}
	b = binary.BigEndian.AppendUint16(b, src.Port())
	b = binary.BigEndian.AppendUint16(b, dst.Port())
	b = binary.BigEndian.AppendUint32(b, seq)
	b = binary.BigEndian.AppendUint32(b, ack)
	b = append(b, 5<<4, flags, 0xff, 0xff, 0, 0, 0, 0)
	return append(b, payload...)
}

// tconn builds the frames of one TCP connection.
type tconn struct {
	addr   [2]netip.AddrPort // [0] the client
	isn    [2]uint32
	next   [2]uint32
	vlan   int
	frames [][]byte
}

func newTConn(client, server string, isnC, isnS uint32) *tconn {
	return &tconn{
		addr: [2]netip.AddrPort{netip.MustParseAddrPort(client), netip.MustParseAddrPort(server)},
		isn:  [2]uint32{isnC, isnS}, next: [2]uint32{isnC + 1, isnS + 1}, vlan: -1,
	}
}

func (c *tconn) frame(side int, seq uint32, flags uint8, p []byte) []byte {
	return tcpFrame(c.addr[side], c.addr[1-side], seq, c.next[1-side], flags, p, c.vlan)
}

func (c *tconn) add(f []byte) { c.frames = append(c.frames, f) }

func (c *tconn) syn()    { c.add(c.frame(0, c.isn[0], tcpSYN, nil)) }
func (c *tconn) synAck() { c.add(c.frame(1, c.isn[1], tcpSYN|tcpACK, nil)) }
func (c *tconn) ack(side int) {
	c.add(c.frame(side, c.next[side], tcpACK, nil))
}

func (c *tconn) handshake() { c.syn(); c.synAck(); c.ack(0) }

// seg returns (without adding) a data segment of side carrying p and
// advances its sequence number.
func (c *tconn) seg(side int, p []byte) []byte {
	f := c.frame(side, c.next[side], tcpACK|0x08, p)
	c.next[side] += uint32(len(p))
	return f
}

// send adds p as segments of at most mss octets.
func (c *tconn) send(side int, p []byte, mss int) {
	for len(p) > 0 {
		n := min(len(p), mss)
		c.add(c.seg(side, p[:n]))
		p = p[n:]
	}
}

func (c *tconn) fin(side int) {
	c.add(c.frame(side, c.next[side], tcpFIN|tcpACK, nil))
	c.next[side]++
}

// mpaFrame encodes an MPA Request or Reply as siw sends it (Rev 2, S, IRD
// and ORD), with CRC and markers as asked.
func mpaFrame(t testing.TB, reply, crc, markers bool) []byte {
	t.Helper()
	f := wire.MPAFields{Reply: reply, CRC: crc, Markers: markers, Enhanced: true, Rev: wire.MPARev2,
		IRDORD: wire.IRDORD{IRD: 16, ORD: 16}, PrivateData: []byte("pd")}
	b, err := wire.AppendMPAFrame(nil, &f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fpdus builds a stream of FPDUs (framed as fr, starting at stream offset
// off after the MPA frame) for the segments given by headers and payloads,
// and returns the stream and where each FPDU starts in it.
type msg struct {
	h       wire.Headers
	payload []byte
	term    *wire.TermFields
}

func fpduStream(fr wire.Framing, msgs []msg) (stream []byte, starts []int) {
	for _, m := range msgs {
		starts = append(starts, len(stream))
		payload := m.payload
		if m.term != nil {
			payload = wire.AppendTerminate(nil, m.term)
		}
		stream = wire.AppendFPDU(stream, fr, uint32(len(stream)), wire.AppendHeaders(nil, &m.h), payload)
	}
	return stream, starts
}

func send(msn uint32, n int) msg {
	return msg{h: wire.Headers{DDP: wire.DDPFields{Last: true, Opcode: wire.OpSend, QN: wire.QNSend, MSN: msn}},
		payload: []byte(strings.Repeat("s", n))}
}

func write(stag uint32, to uint64, n int) msg {
	return msg{h: wire.Headers{DDP: wire.DDPFields{Last: true, Opcode: wire.OpWrite, STag: stag, TO: to}},
		payload: []byte(strings.Repeat("w", n))}
}

// run feeds frames to a new decoder and returns the text lines (without
// frame number and time when bare) and the counts.
type result struct {
	lines                        []string
	mpa, fpdus, crcBad, unknowns int
	reasons                      []string
}

func decodeFrames(frames [][]byte) result {
	var res result
	d := New()
	emit := func(r *Record) {
		res.lines = append(res.lines, string(AppendText(nil, r)))
		if _, err := AppendJSON(nil, "", r); err != nil {
			panic(err)
		}
		switch r.Kind {
		case KindMPA:
			res.mpa++
		case KindFPDU:
			res.fpdus++
		case KindUnknown:
			res.unknowns++
			res.reasons = append(res.reasons, r.Reason)
		}
		if r.BadCRC() {
			res.crcBad++
		}
	}
	for i, f := range frames {
		d.Frame(f, i+1, time.Duration(i)*time.Millisecond, emit)
	}
	d.Flush(emit)
	return res
}

// bare strips "#N T " from a line.
func bare(l string) string {
	_, rest, _ := strings.Cut(l, " ")
	_, rest, _ = strings.Cut(rest, " ")
	return rest
}

// captureFiles returns the real siw captures in testdata/captures.
func captureFiles(t testing.TB) []string {
	t.Helper()
	files, _ := filepath.Glob("../../testdata/captures/siw-*.pcap")
	if len(files) == 0 {
		t.Fatal("no siw captures found")
	}
	return files
}

// readPcap returns the frames of a capture.
func readPcap(t testing.TB, path string) [][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var frames [][]byte
	for {
		b, _, err := r.ReadPacketData()
		if errors.Is(err, io.EOF) {
			return frames
		}
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, b)
	}
}
