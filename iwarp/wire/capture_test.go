package wire

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// captureFiles returns the real siw captures in testdata/captures.
func captureFiles(t testing.TB) []string {
	t.Helper()
	files, _ := filepath.Glob("../../testdata/captures/siw-*.pcap")
	if len(files) == 0 {
		t.Fatal("no siw captures found")
	}
	return files
}

// tcpDir is one direction of a TCP connection, reassembled by sequence
// number (the captures are clean: no holes, retransmissions at most).
type tcpDir struct {
	key     string
	isn     uint32
	synSeen bool
	data    []byte
	have    []bool
	segs    [][2]int // [offset, length] of each data segment, in capture order
}

func (d *tcpDir) add(seq uint32, p []byte) {
	off := int(seq - d.isn - 1) // the SYN takes one sequence number
	if end := off + len(p); end > len(d.data) {
		d.data = append(d.data, make([]byte, end-len(d.data))...)
		d.have = append(d.have, make([]bool, end-len(d.have))...)
	}
	copy(d.data[off:], p)
	for i := range p {
		d.have[off+i] = true
	}
	d.segs = append(d.segs, [2]int{off, len(p)})
}

// chunks returns the stream cut where TCP cut it: the segments in sequence
// order, retransmitted octets dropped.
func (d *tcpDir) chunks(from int) [][]byte {
	segs := append([][2]int(nil), d.segs...)
	sort.SliceStable(segs, func(i, j int) bool { return segs[i][0] < segs[j][0] })
	var out [][]byte
	next := from
	for _, s := range segs {
		end := s[0] + s[1]
		if end <= next {
			continue
		}
		out = append(out, d.data[max(s[0], next):end])
		next = end
	}
	return out
}

type tcpConn struct {
	name string
	dirs [2]*tcpDir // [0] opened the connection (sent the SYN)
}

// readConns reassembles every TCP connection of a pcap that starts with a
// SYN.
func readConns(t testing.TB, path string) []*tcpConn {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	r, err := pcapgo.NewReader(fh)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	dirs := map[string]*tcpDir{}
	var conns []*tcpConn
	var eth layers.Ethernet
	var ip4 layers.IPv4
	var ip6 layers.IPv6
	var tcp layers.TCP
	parser := gopacket.NewDecodingLayerParser(layers.LayerTypeEthernet, &eth, &ip4, &ip6, &tcp)
	parser.IgnoreUnsupported = true
	var decoded []gopacket.LayerType
	for {
		data, _, err := r.ReadPacketData()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if err := parser.DecodeLayers(data, &decoded); err != nil {
			continue
		}
		var src, dst string
		isTCP := false
		for _, l := range decoded {
			switch l {
			case layers.LayerTypeIPv4:
				src, dst = ip4.SrcIP.String(), ip4.DstIP.String()
			case layers.LayerTypeIPv6:
				src, dst = ip6.SrcIP.String(), ip6.DstIP.String()
			case layers.LayerTypeTCP:
				isTCP = true
			}
		}
		if !isTCP {
			continue
		}
		key := fmt.Sprintf("%s:%d>%s:%d", src, tcp.SrcPort, dst, tcp.DstPort)
		rkey := fmt.Sprintf("%s:%d>%s:%d", dst, tcp.DstPort, src, tcp.SrcPort)
		d := dirs[key]
		if tcp.SYN {
			if d == nil || len(d.data) > 0 {
				d = &tcpDir{key: key}
				dirs[key] = d
				if !tcp.ACK {
					conns = append(conns, &tcpConn{name: key, dirs: [2]*tcpDir{d, nil}})
				} else {
					for _, c := range conns {
						if c.dirs[0].key == rkey && c.dirs[1] == nil {
							c.dirs[1] = d
						}
					}
				}
			}
			d.isn, d.synSeen = tcp.Seq, true
			continue
		}
		if d == nil || !d.synSeen || len(tcp.Payload) == 0 {
			continue
		}
		d.add(tcp.Seq, tcp.Payload)
	}
	for _, c := range conns {
		for _, d := range c.dirs {
			if d == nil {
				continue
			}
			for i, ok := range d.have {
				if !ok {
					t.Fatalf("%s %s: hole at stream offset %d", path, d.key, i)
				}
			}
		}
	}
	return conns
}

// mpaConn is an MPA connection found in a capture.
type mpaConn struct {
	name     string
	req, rep MPAFrame
	// streams[0] is the initiator's direction; off[i] is where its FPDUs
	// start; framing[i] what was negotiated for it.
	streams [2]*tcpDir
	off     [2]int
	framing [2]Framing
}

func mpaConns(t testing.TB, path string) []*mpaConn {
	t.Helper()
	var out []*mpaConn
	for _, c := range readConns(t, path) {
		if c.dirs[1] == nil {
			continue
		}
		ini, resp := c.dirs[0], c.dirs[1]
		if !bytes.HasPrefix(ini.data, []byte(MPAKeyRequest)) {
			continue
		}
		req, n, err := ParseMPAFrame(ini.data)
		if err != nil {
			t.Fatalf("%s %s: MPA Request: %v", path, c.name, err)
		}
		rep, m, err := ParseMPAFrame(resp.data)
		if err != nil {
			t.Fatalf("%s %s: MPA Reply: %v", path, c.name, err)
		}
		mc := &mpaConn{name: c.name, req: req, rep: rep, streams: [2]*tcpDir{ini, resp}, off: [2]int{n, m}}
		mc.framing[0], mc.framing[1] = Negotiate(req, rep)
		out = append(out, mc)
	}
	if len(out) == 0 {
		t.Fatalf("%s: no MPA connection", path)
	}
	return out
}

// TestCaptures: in every TCP connection of every siw capture, the MPA
// Request and Reply parse (Rev 2 with the RFC 6581 IRD/ORD words, as siw
// sends them) and re-encode to the same octets; then every FPDU of both
// directions deframes (fed as TCP cut the stream, and whole), its CRC
// verifies where CRCs were negotiated and is zero where not, its DDP and
// RDMAP headers decode, and re-encoding the decoded headers and payload
// reproduces the FPDU octets exactly.
func TestCaptures(t *testing.T) {
	total, crcChecked, dirtyPad := 0, 0, 0
	for _, path := range captureFiles(t) {
		name := filepath.Base(path)
		n := 0
		ops := map[Opcode]int{}
		for _, c := range mpaConns(t, path) {
			for i, f := range []MPAFrame{c.req, c.rep} {
				if f.IsReply() != (i == 1) || f.Rev() != MPARev2 || !f.HasIRDORD() || f.Markers() || f.Reject() || f.Reserved() != 0 {
					t.Errorf("%s %s: MPA frame %+v", name, c.name, f.Fields())
				}
				if f.CRC() != strings.Contains(name, "-mpacrc") {
					t.Errorf("%s: C=%v", name, f.CRC())
				}
				v := f.IRDORD()
				if v.PeerToPeer || v.SendRTR || v.WriteRTR || v.ReadRTR || v.IRD > 128 || v.ORD > 128 {
					t.Errorf("%s %s: IRD/ORD %+v", name, c.name, v)
				}
				fl := f.Fields()
				if out, err := AppendMPAFrame(nil, &fl); err != nil || !bytes.Equal(out, f) {
					t.Errorf("%s %s: MPA frame re-encoded %x, %v", name, c.name, out, err)
				}
			}
			for dir := 0; dir < 2; dir++ {
				stream := c.streams[dir].data[c.off[dir]:]
				fr := c.framing[dir]
				res, err := deframeChunks(fr, MaxULPDU, c.streams[dir].chunks(c.off[dir]))
				if err != nil {
					t.Fatalf("%s %s dir %d: %v after %d FPDUs", name, c.name, dir, err, len(res))
				}
				whole, err := deframeChunks(fr, MaxULPDU, [][]byte{stream})
				if err != nil || len(whole) != len(res) {
					t.Fatalf("%s %s dir %d: whole stream gives %d FPDUs, %v", name, c.name, dir, len(whole), err)
				}
				for k, r := range res {
					if r != whole[k] {
						t.Errorf("%s %s dir %d FPDU %d: TCP segmentation changed the result", name, c.name, dir, k)
					}
					where := fmt.Sprintf("%s %s dir %d FPDU %d (stream offset %d)", name, c.name, dir, k, r.off)
					if fr.CRC {
						if !r.crcOK {
							t.Errorf("%s: bad CRC %08x", where, r.crc)
						}
						crcChecked++
					} else if r.crc != 0 {
						t.Errorf("%s: CRC %08x with CRC off", where, r.crc)
					}
					var s Segment
					if err := s.Decode([]byte(r.ulpdu)); err != nil {
						t.Errorf("%s: %v", where, err)
						continue
					}
					h := s.Headers()
					out := AppendFPDU(nil, fr, r.off, AppendHeaders(nil, &h), s.Payload())
					if r.pad != string(make([]byte, len(r.pad))) {
						// siw does not zero the pad (RFC 5044 §4.1 says
						// it must): put its octets back (and, with CRCs,
						// the CRC over them) to compare the rest.
						copy(out[LengthFieldLen+len(r.ulpdu):], r.pad)
						if fr.CRC {
							PutCRC(out[len(out)-CRCLen:], CRC(out[:len(out)-CRCLen]))
						}
						dirtyPad++
					}
					if !bytes.Equal(out, stream[r.off:int(r.off)+r.wireLen]) {
						t.Errorf("%s (%v): re-encoded FPDU differs\n got %x\nwant %x", where, s.Opcode(), out, stream[r.off:int(r.off)+r.wireLen])
					}
					ops[s.Opcode()]++
					n++
				}
			}
		}
		t.Logf("%s: %d FPDUs; opcodes %v", name, n, ops)
		total += n
	}
	t.Logf("%d FPDUs in all, %d with CRC-32C verified, %d with a non-zero pad", total, crcChecked, dirtyPad)
	if total == 0 {
		t.Fatal("no FPDUs")
	}
}
