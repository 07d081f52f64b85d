// Tests of the TCP capture synthesis: captures of simulated and kernel
// conversations open with pcapgo, and tshark finds them clean (checksums
// verified, no expert info at warning or above, no tcp.analysis flag), with
// the reassembled streams equal to the bytes written. One capture carries
// an MPA handshake and FPDUs, which tshark must dissect as iWARP.

package streamcap_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/rnic/rnic/transport"
	"github.com/rnic/rnic/transport/clock"
	"github.com/rnic/rnic/transport/pcap"
	"github.com/rnic/rnic/transport/stream"
	"github.com/rnic/rnic/transport/stream/kerneltcp"
	"github.com/rnic/rnic/transport/stream/simstream"
	"github.com/rnic/rnic/transport/stream/streamcap"
	"github.com/rnic/rnic/transport/stream/streamtest"
	"github.com/rnic/rnic/transport/tsharktest"
)

// arbitrary splits and coalesces a simulated stream as a busy network
// would: the capture must not depend on how the bytes travelled.
var arbitrary = simstream.Config{
	Seed:       42,
	Latency:    5 * time.Microsecond,
	Bandwidth:  10e9,
	Chop:       0.5,
	Coalesce:   2 * time.Microsecond,
	SendBuffer: 64 << 10,
}

// readPcap opens path with pcapgo and decodes every frame as
// Ethernet/IP/TCP, failing on anything else; it returns the TCP layers.
func readPcap(t *testing.T, path string) []*layers.TCP {
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
	if r.LinkType() != layers.LinkTypeEthernet {
		t.Fatalf("link type %v", r.LinkType())
	}
	var segs []*layers.TCP
	for {
		data, _, err := r.ReadPacketData()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		p := gopacket.NewPacket(data, layers.LayerTypeEthernet, gopacket.Default)
		if el := p.ErrorLayer(); el != nil {
			t.Fatalf("frame %d: %v", len(segs)+1, el.Error())
		}
		tcp, ok := p.Layer(layers.LayerTypeTCP).(*layers.TCP)
		if !ok {
			t.Fatalf("frame %d is not TCP", len(segs)+1)
		}
		segs = append(segs, tcp)
	}
	return segs
}

// dataPorts makes tshark hand the payload of the connection's ports to the
// plain data dissector, so that random payload bytes are never mistaken
// for some protocol that happens to own a port.
func dataPorts(ports ...uint16) []string {
	var args []string
	for _, p := range ports {
		args = append(args, "-d", fmt.Sprintf("tcp.port==%d,data", p))
	}
	return args
}

// oracle runs the tshark checks on a capture and returns the two
// directions of TCP stream 0 as tshark reassembled them.
func oracle(t *testing.T, path string, o tsharktest.Options) (client, server []byte) {
	t.Helper()
	tsharktest.Check(t, path, o)
	f := o
	f.Filter = "tcp.analysis.flags || tcp.checksum.status != 1 || ip.checksum.status == 0"
	for _, r := range tsharktest.Fields(t, path, f, "_ws.col.Info", "tcp.analysis.flags") {
		t.Errorf("tshark flags frame %s: %s", r["frame.number"], r["_ws.col.Info"])
	}
	return follow(t, path, o.Args)
}

// runTshark runs tshark over path (two passes, no name resolution, the
// payload heuristics of tsharktest off) with args and returns its output.
func runTshark(t *testing.T, path string, args ...string) string {
	t.Helper()
	all := []string{"-r", path, "-n", "-2"}
	for _, h := range []string{"rpcrdma_iwarp", "smb_direct_iwarp"} {
		all = append(all, "--disable-heuristic", h)
	}
	cmd := exec.Command(tsharktest.Path(t), append(all, args...)...)
	cmd.Env = append(os.Environ(), "WIRESHARK_CONFIG_DIR="+filepath.Join(os.TempDir(), "tsharktest-no-config"))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark %v: %v", args, err)
	}
	return string(out)
}

// follow returns tshark's reassembly of TCP stream 0: the bytes node 0 (the
// client, which sent the SYN) sent and those node 1 sent.
func follow(t *testing.T, path string, extra []string) (client, server []byte) {
	t.Helper()
	args := append([]string{"-r", path, "-n"}, extra...)
	args = append(args, "-q", "-z", "follow,tcp,raw,0")
	cmd := exec.Command(tsharktest.Path(t), args...)
	cmd.Env = append(os.Environ(), "WIRESHARK_CONFIG_DIR="+filepath.Join(os.TempDir(), "tsharktest-no-config"))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark follow: %v", err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		switch {
		case l == "", strings.HasPrefix(l, "==="), strings.HasPrefix(l, "Follow:"),
			strings.HasPrefix(l, "Filter:"), strings.HasPrefix(l, "Node "):
			continue
		}
		dst := &client
		if strings.HasPrefix(l, "\t") {
			dst = &server
		}
		b, err := hex.DecodeString(strings.TrimSpace(l))
		if err != nil {
			t.Fatalf("tshark follow: line %q: %v", l, err)
		}
		*dst = append(*dst, b...)
	}
	return client, server
}

func checkStream(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if string(got) != string(want) {
		t.Errorf("%s: tshark reassembled %d bytes, want %d; first difference at %d", what, len(got), len(want), streamtest.FirstDiff(got, want))
	}
}

func newPcap(t *testing.T, name string) (*pcap.Writer, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	w, err := pcap.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	return w, path
}

// simConversation exchanges n random bytes each way over a chopped
// simulated pair, capturing at A into one file and at B into another.
func simConversation(t *testing.T, cfg simstream.Config, n int) (pathA, pathB string, a2b, b2a []byte) {
	t.Helper()
	clk := clock.NewVirtual()
	a, b := simstream.NewPair(clk, cfg)
	wa, pathA := newPcap(t, "a.pcap")
	wb, pathB := newPcap(t, "b.pcap")
	now := transport.VirtualTimestamps(clk)
	ta := streamcap.TeeConn(a, wa, streamcap.Endpoint{}, streamcap.Endpoint{}, now)
	tb := streamcap.TeeConn(b, wb, streamcap.Endpoint{MSS: 65483}, streamcap.Endpoint{}, now)
	a2b, b2a = streamtest.Pattern(7, n), streamtest.Pattern(8, n)
	sa, sb := streamtest.NewSink(ta, nil), streamtest.NewSink(tb, nil)
	fa, fb := streamtest.NewFeeder(ta, a2b, 1, 30000, true), streamtest.NewFeeder(tb, b2a, 2, 30000, true)
	clk.AfterFunc(0, fa.Pump)
	clk.AfterFunc(0, fb.Pump)
	clk.Run(nil)
	streamtest.CheckDelivered(t, "B", sb, a2b, io.EOF)
	streamtest.CheckDelivered(t, "A", sa, b2a, io.EOF)
	for _, w := range []*pcap.Writer{wa, wb} {
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return pathA, pathB, a2b, b2a
}

func TestPcapSim(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		t.Run(map[bool]string{false: "IPv4", true: "IPv6"}[v6], func(t *testing.T) {
			cfg := arbitrary
			if v6 {
				cfg.A = netip.MustParseAddrPort("[fd00::1]:49152")
				cfg.B = netip.MustParseAddrPort("[fd00::2]:18515")
			}
			pathA, pathB, a2b, b2a := simConversation(t, cfg, 300000)
			segs := readPcap(t, pathA)
			if !segs[0].SYN || segs[0].ACK || !segs[1].SYN || !segs[1].ACK || segs[2].SYN || !segs[2].ACK {
				t.Errorf("capture does not open with SYN, SYN-ACK, ACK")
			}
			var fins int
			for _, s := range segs {
				if s.FIN {
					fins++
				}
				if s.RST {
					t.Errorf("RST in an orderly conversation")
				}
			}
			if fins != 2 {
				t.Errorf("%d FINs, want 2", fins)
			}
			// Both ends' captures hold the whole conversation, the client
			// (A, which sent the SYN) as node 0.
			for _, path := range []string{pathA, pathB} {
				o := tsharktest.Options{Args: dataPorts(49152, 18515)}
				c, s := oracle(t, path, o)
				checkStream(t, filepath.Base(path)+" A->B", c, a2b)
				checkStream(t, filepath.Base(path)+" B->A", s, b2a)
			}
		})
	}
}

func TestPcapKernelTCP(t *testing.T) {
	streamtest.CheckNoLeak(t)
	tsharktest.Path(t)
	wc, pathC := newPcap(t, "client.pcap")
	ws, pathS := newPcap(t, "server.pcap")
	l, err := kerneltcp.Listen(netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	up, down := streamtest.Pattern(11, 500000), streamtest.Pattern(12, 400000)
	serverDone := make(chan *streamtest.Sink, 1)
	l.SetAcceptor(func(c stream.Conn) {
		tc := streamcap.TeeConn(c, ws, streamcap.Endpoint{MSS: 65483}, streamcap.Endpoint{MSS: 65483}, time.Now)
		s := streamtest.NewSink(tc, nil)
		f := streamtest.NewFeeder(tc, down, 3, 70000, true)
		go f.Pump()
		serverDone <- s
	})
	c, err := kerneltcp.Dial(netip.Addr{}, l.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	tc := streamcap.TeeConn(c, wc, streamcap.Endpoint{}, streamcap.Endpoint{}, time.Now)
	cs := streamtest.NewSink(tc, nil)
	fc := streamtest.NewFeeder(tc, up, 4, 70000, true)
	fc.Pump()
	ss := <-serverDone
	ss.Wait(t, "server")
	cs.Wait(t, "client")
	streamtest.WaitFeeder(t, "client", fc)
	streamtest.CheckDelivered(t, "server", ss, up, io.EOF)
	streamtest.CheckDelivered(t, "client", cs, down, io.EOF)
	for _, w := range []*pcap.Writer{wc, ws} {
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for _, path := range []string{pathC, pathS} {
		readPcap(t, path)
		o := tsharktest.Options{Args: dataPorts(c.LocalAddr().Port(), c.RemoteAddr().Port())}
		got, back := oracle(t, path, o)
		checkStream(t, filepath.Base(path)+" client->server", got, up)
		checkStream(t, filepath.Base(path)+" server->client", back, down)
	}
}

func TestPcapReset(t *testing.T) {
	clk := clock.NewVirtual()
	a, b := simstream.NewPair(clk, simstream.Config{})
	wa, pathA := newPcap(t, "a.pcap")
	wb, pathB := newPcap(t, "b.pcap")
	now := transport.VirtualTimestamps(clk)
	ta := streamcap.TeeConn(a, wa, streamcap.Endpoint{}, streamcap.Endpoint{}, now)
	tb := streamcap.TeeConn(b, wb, streamcap.Endpoint{}, streamcap.Endpoint{}, now)
	sa, sb := streamtest.NewSink(ta, nil), streamtest.NewSink(tb, nil)
	ta.Write([]byte("some bytes"))
	tb.Write([]byte("an answer"))
	clk.Run(nil)
	ta.Abort()
	ta.Abort()
	clk.Run(nil)
	streamtest.CheckDelivered(t, "A", sa, []byte("an answer"), stream.ErrAborted)
	streamtest.CheckDelivered(t, "B", sb, []byte("some bytes"), stream.ErrReset)
	wa.Close()
	wb.Close()
	for _, path := range []string{pathA, pathB} {
		segs := readPcap(t, path)
		if last := segs[len(segs)-1]; !last.RST {
			t.Errorf("%s: last frame is not a RST", path)
		}
		var rsts int
		for _, s := range segs {
			if s.RST {
				rsts++
			}
		}
		if rsts != 1 {
			t.Errorf("%s: %d RSTs", path, rsts)
		}
		// The only complaint allowed: tshark's warning about the RST.
		o := tsharktest.Options{Args: dataPorts(49152, 18515), Filter: "_ws.expert.severity >= warning || tcp.analysis.flags || _ws.malformed"}
		for _, r := range tsharktest.Fields(t, path, o, "tcp.flags.reset", "_ws.expert.message") {
			if r["tcp.flags.reset"] != "1" && r["tcp.flags.reset"] != "True" {
				t.Errorf("%s: frame %s: %s", path, r["frame.number"], r["_ws.expert.message"])
			}
		}
		c, s := follow(t, path, o.Args)
		checkStream(t, path+" A->B", c, []byte("some bytes"))
		checkStream(t, path+" B->A", s, []byte("an answer"))
	}
}

// MPA (RFC 5044) with CRCs, no markers: the request and reply, then
// FPDUs carrying RDMAP Sends, written as the iWARP engine will.
func mpaFrame(key string, pd []byte) []byte {
	b := append([]byte(key), 0x40, 1, 0, 0) // C=1, M=0, Rev 1
	binary.BigEndian.PutUint16(b[18:], uint16(len(pd)))
	return append(b, pd...)
}

// fpduSend builds an FPDU holding an untagged RDMAP Send of payload.
func fpduSend(msn uint32, payload []byte) []byte {
	ulpdu := []byte{0x41, 0x43, 0, 0, 0, 0}           // DDP L=1 DV=1; RDMAP RV=1 Send; reserved
	ulpdu = binary.BigEndian.AppendUint32(ulpdu, 0)   // QN
	ulpdu = binary.BigEndian.AppendUint32(ulpdu, msn) // MSN
	ulpdu = binary.BigEndian.AppendUint32(ulpdu, 0)   // MO
	ulpdu = append(ulpdu, payload...)
	f := binary.BigEndian.AppendUint16(nil, uint16(len(ulpdu)))
	f = append(f, ulpdu...)
	for len(f)%4 != 0 {
		f = append(f, 0)
	}
	return binary.LittleEndian.AppendUint32(f, crc32.Checksum(f, crc32.MakeTable(crc32.Castagnoli)))
}

// mpaFramer is a Framer of iWARP without markers: an MPA request or reply
// (RFC 5044 §7.1) is 20 bytes plus its private data, an FPDU 2 +
// ULPDU_Length + pad + CRC.
func newMPAFramer() streamcap.Framer { return mpaFramer }

func mpaFramer(_ int64, p []byte) int {
	const key = "MPA ID "
	if n := min(len(p), len(key)); string(p[:n]) == key[:n] {
		if len(p) < 20 {
			return 0
		}
		return 20 + int(binary.BigEndian.Uint16(p[18:20]))
	}
	if len(p) < 2 {
		return 0
	}
	n := 2 + int(binary.BigEndian.Uint16(p))
	return n + (4-n%4)%4 + 4
}

// mpaConversation plays an MPA connection between a (the initiator, whose
// traffic the tee ta captures into w at path) and b: the request, the
// reply, and only then FPDUs, 40 Sends each way (RFC 5044 §7.1: tshark's
// MPA state machine follows exactly that order). wait runs the connection
// until cond holds. It then checks the capture with tshark.
func mpaConversation(t *testing.T, ta, b stream.Conn, w *pcap.Writer, path string, wait func(cond func() bool)) {
	t.Helper()
	req := mpaFrame("MPA ID Req Frame", []byte("hello"))
	rep := mpaFrame("MPA ID Rep Frame", nil)
	var upF, downF []byte
	for i := range 40 {
		upF = append(upF, fpduSend(uint32(i+1), streamtest.Pattern(uint64(i), 1+i*37))...)
		downF = append(downF, fpduSend(uint32(i+1), streamtest.Pattern(uint64(100+i), 2500-i*50))...)
	}
	up, down := append(bytes.Clone(req), upF...), append(bytes.Clone(rep), downF...)
	sa, sb := streamtest.NewSink(ta, nil), streamtest.NewSink(b, nil)
	received := func(s *streamtest.Sink, n int) func() bool {
		return func() bool { got, _, _ := s.Result(); return len(got) >= n }
	}
	if _, err := ta.Write(req); err != nil {
		t.Fatal(err)
	}
	wait(received(sb, len(req)))
	fb := streamtest.NewFeeder(b, downF, 2, 3000, true)
	if _, err := b.Write(rep); err != nil {
		t.Fatal(err)
	}
	fb.Pump()
	wait(received(sa, len(rep)))
	fa := streamtest.NewFeeder(ta, upF, 1, 3000, true)
	fa.Pump()
	closed := func(s *streamtest.Sink) func() bool {
		return func() bool { _, n, _ := s.Result(); return n > 0 }
	}
	wait(closed(sa))
	wait(closed(sb))
	streamtest.CheckDelivered(t, "B", sb, up, io.EOF)
	streamtest.CheckDelivered(t, "A", sa, down, io.EOF)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	o := tsharktest.Options{RequireMPA: true}
	c, s := oracle(t, path, o)
	checkStream(t, "A->B", c, up)
	checkStream(t, "B->A", s, down)
	// Every FPDU is dissected as an RDMAP Send (Check found no bad CRC):
	// 40 each way, with MSNs 1 to 40.
	out := runTshark(t, path, "-Y", "iwarp_rdma.opcode == 3", "-T", "fields",
		"-e", "tcp.srcport", "-e", "iwarp_ddp.msn", "-E", "occurrence=a", "-E", "aggregator=,")
	msns := map[string][]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		port, list, _ := strings.Cut(l, "\t")
		msns[port] = append(msns[port], strings.Split(list, ",")...)
	}
	if len(msns) != 2 {
		t.Errorf("Sends from %d ports, want 2", len(msns))
	}
	for port, got := range msns {
		ok := len(got) == 40
		for i := 0; ok && i < 40; i++ {
			ok = got[i] == fmt.Sprint(i+1)
		}
		if !ok {
			t.Errorf("port %s: tshark found Sends with MSNs %v, want 1..40", port, got)
		}
	}
	o.Filter = "iwarp_mpa.key.req || iwarp_mpa.key.rep"
	if rows := tsharktest.Fields(t, path, o, "iwarp_mpa.crc_flag"); len(rows) != 2 {
		t.Errorf("MPA request/reply frames: %d, want 2", len(rows))
	}
}

func TestPcapMPASim(t *testing.T) {
	tsharktest.Path(t)
	clk := clock.NewVirtual()
	cfg := arbitrary
	cfg.MSS = 700 // FPDUs spread over several segments, chunks split anywhere
	a, b := simstream.NewPair(clk, cfg)
	w, path := newPcap(t, "mpa-sim.pcap")
	ta := streamcap.TeeConnWith(a, w, streamcap.TeeConfig{
		Local: streamcap.Endpoint{MSS: 1000}, Remote: streamcap.Endpoint{MSS: 1000},
		Now: transport.VirtualTimestamps(clk), NewFramer: newMPAFramer,
	})
	mpaConversation(t, ta, b, w, path, func(cond func() bool) { clk.Run(cond) })
}

func TestPcapMPAKernelTCP(t *testing.T) {
	streamtest.CheckNoLeak(t)
	tsharktest.Path(t)
	l, err := kerneltcp.Listen(netip.MustParseAddrPort("[::1]:0"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan stream.Conn, 1)
	l.SetAcceptor(func(c stream.Conn) { accepted <- c })
	a, err := kerneltcp.Dial(netip.Addr{}, l.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	b := <-accepted
	w, path := newPcap(t, "mpa-tcp.pcap")
	ta := streamcap.TeeConnWith(a, w, streamcap.TeeConfig{
		Local: streamcap.Endpoint{MSS: 65483}, Remote: streamcap.Endpoint{MSS: 65483}, Now: time.Now, NewFramer: newMPAFramer,
	})
	mpaConversation(t, ta, b, w, path, func(cond func() bool) {
		for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("timed out")
			}
		}
	})
}

func TestPcapFramerOnForeignBytes(t *testing.T) {
	// A Framer that misreads the stream (random bytes taken for FPDUs of
	// random lengths) holds bytes back until maxPending or the end, then
	// gives up framing: the capture stays whole and consistent.
	tsharktest.Path(t)
	clk := clock.NewVirtual()
	a, b := simstream.NewPair(clk, arbitrary)
	w, path := newPcap(t, "foreign.pcap")
	ta := streamcap.TeeConnWith(a, w, streamcap.TeeConfig{Now: transport.VirtualTimestamps(clk), NewFramer: newMPAFramer})
	up, down := streamtest.Pattern(21, 400000), streamtest.Pattern(22, 1000)
	sa, sb := streamtest.NewSink(ta, nil), streamtest.NewSink(b, nil)
	fa, fb := streamtest.NewFeeder(ta, up, 1, 30000, true), streamtest.NewFeeder(b, down, 2, 300, true)
	clk.AfterFunc(0, fa.Pump)
	clk.AfterFunc(0, fb.Pump)
	clk.Run(nil)
	streamtest.CheckDelivered(t, "B", sb, up, io.EOF)
	streamtest.CheckDelivered(t, "A", sa, down, io.EOF)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	c, s := oracle(t, path, tsharktest.Options{Args: dataPorts(49152, 18515)})
	checkStream(t, "A->B", c, up)
	checkStream(t, "B->A", s, down)
}
