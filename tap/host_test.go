package tap

import (
	"bytes"
	"encoding/binary"
	"net"
	"net/netip"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"

	"github.com/rnic/rnic/roce/wire"
	"github.com/rnic/rnic/transport/clock"
)

// The test network: the Host under test and a peer the test plays.
var (
	hostMAC  = [6]byte{0x02, 0, 0, 0, 0, 0x01}
	peerMAC  = [6]byte{0x02, 0, 0, 0, 0, 0x02}
	otherMAC = [6]byte{0x02, 0, 0, 0, 0, 0x99}
	host4    = netip.MustParseAddr("192.0.2.1")
	peer4    = netip.MustParseAddr("192.0.2.2")
	host6    = netip.MustParseAddr("2001:db8::1")
	peer6    = netip.MustParseAddr("2001:db8::2")
	hostLL   = netip.MustParseAddr("fe80::1")
)

// testWire is the test's end of the pipe: it plays every other host.
type testWire struct {
	t      *testing.T
	io     FrameIO
	frames chan []byte
}

type hostOpt func(*HostConfig)

// newTestHost starts a Host on a pipe and returns it with the test's end.
// The host has not been Started (no announcements) unless start is set;
// its reader runs either way.
func newTestHost(t *testing.T, start bool, opts ...hostOpt) (*Host, *testWire) {
	t.Helper()
	a, b := NewFramePipe()
	cfg := HostConfig{
		IO:  a,
		MAC: hostMAC,
		Prefixes: []netip.Prefix{
			netip.MustParsePrefix("192.0.2.1/24"),
			netip.MustParsePrefix("2001:db8::1/64"),
			netip.MustParsePrefix("fe80::1/64"),
		},
		Log: t.Logf,
	}
	for _, o := range opts {
		o(&cfg)
	}
	h, err := NewHost(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w := &testWire{t: t, io: b, frames: make(chan []byte, 1024)}
	go func() {
		buf := make([]byte, 65536)
		for {
			n, err := b.ReadFrame(buf)
			if err != nil {
				close(w.frames)
				return
			}
			w.frames <- append([]byte(nil), buf[:n]...)
		}
	}()
	if start {
		h.Start()
	} else {
		// Run the reader without the announcements.
		h.startOnce.Do(func() { h.started.Store(true); go h.readLoop(); go h.loopLoop() })
	}
	t.Cleanup(func() {
		h.Close()
		b.Close()
	})
	return h, w
}

// next returns the next frame the host wrote (bounded wait).
func (w *testWire) next() []byte {
	w.t.Helper()
	select {
	case f, ok := <-w.frames:
		if !ok {
			w.t.Fatal("wire closed")
		}
		return f
	case <-time.After(5 * time.Second):
		w.t.Fatal("timeout waiting for a frame from the host")
	}
	return nil
}

// send puts a frame on the wire towards the host.
func (w *testWire) send(f []byte) {
	w.t.Helper()
	if err := w.io.WriteFrame(f); err != nil {
		w.t.Fatal(err)
	}
}

// barrier proves the host has handled every frame sent so far and written
// nothing in response to them: it pings and requires the echo reply to be
// the next frame on the wire (the reader works in order).
func (w *testWire) barrier() {
	w.t.Helper()
	w.send(echoRequest4(w.t, peerMAC, hostMAC, peer4, host4, 0xbeef, 0xbeef, nil))
	f := w.next()
	p := decode(f)
	icmp, _ := p.Layer(layers.LayerTypeICMPv4).(*layers.ICMPv4)
	if icmp == nil || icmp.TypeCode.Type() != layers.ICMPv4TypeEchoReply || icmp.Id != 0xbeef {
		w.t.Fatalf("barrier: expected the echo reply, got\n%s", p.Dump())
	}
}

// drainUntilEcho pings the host and discards frames until the echo reply:
// then every frame sent before has been handled and its answers read.
func (w *testWire) drainUntilEcho() {
	w.t.Helper()
	w.send(echoRequest4(w.t, peerMAC, hostMAC, peer4, host4, 0xbeef, 0xbeef, nil))
	for {
		p := decode(w.next())
		if icmp, _ := p.Layer(layers.LayerTypeICMPv4).(*layers.ICMPv4); icmp != nil &&
			icmp.TypeCode.Type() == layers.ICMPv4TypeEchoReply && icmp.Id == 0xbeef {
			return
		}
	}
}

func decode(f []byte) gopacket.Packet {
	return gopacket.NewPacket(f, layers.LayerTypeEthernet, gopacket.Default)
}

func serialize(t testing.TB, ls ...gopacket.SerializableLayer) []byte {
	t.Helper()
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), buf.Bytes()...)
}

func eth(src, dst [6]byte, et layers.EthernetType) *layers.Ethernet {
	return &layers.Ethernet{SrcMAC: net.HardwareAddr(src[:]), DstMAC: net.HardwareAddr(dst[:]), EthernetType: et}
}

func ip4(src, dst netip.Addr, proto layers.IPProtocol) *layers.IPv4 {
	return &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: proto, SrcIP: src.AsSlice(), DstIP: dst.AsSlice()}
}

func ip6(src, dst netip.Addr, next layers.IPProtocol, hop uint8) *layers.IPv6 {
	return &layers.IPv6{Version: 6, NextHeader: next, HopLimit: hop, SrcIP: src.AsSlice(), DstIP: dst.AsSlice()}
}

func echoRequest4(t testing.TB, src, dst [6]byte, sip, dip netip.Addr, id, seq uint16, data []byte) []byte {
	return serialize(t, eth(src, dst, layers.EthernetTypeIPv4), ip4(sip, dip, layers.IPProtocolICMPv4),
		&layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(layers.ICMPv4TypeEchoRequest, 0), Id: id, Seq: seq},
		gopacket.Payload(data))
}

func icmp6Layer(ip *layers.IPv6, typ, code uint8) *layers.ICMPv6 {
	l := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(typ, code)}
	l.SetNetworkLayerForChecksum(ip)
	return l
}

// checkIPv4Checksum verifies an IPv4 header checksum with gVisor's code
// (independent of the host's).
func checkIPv4Checksum(t testing.TB, ip []byte) {
	t.Helper()
	if !header.IPv4(ip).IsChecksumValid() {
		t.Errorf("IPv4 header checksum %#04x is wrong", binary.BigEndian.Uint16(ip[10:]))
	}
}

// checkICMPv4Checksum verifies an ICMP checksum with gVisor's code.
func checkICMPv4Checksum(t testing.TB, icmp []byte) {
	t.Helper()
	if checksum.Checksum(icmp, 0) != 0xffff {
		t.Errorf("ICMP checksum %#04x is wrong", binary.BigEndian.Uint16(icmp[2:]))
	}
}

// checkICMPv6Checksum verifies the checksum of the ICMPv6 message after
// the IPv6 header ip with gVisor's code.
func checkICMPv6Checksum(t testing.TB, ip []byte, icmpOff int) {
	t.Helper()
	icmp := header.ICMPv6(ip[icmpOff:])
	want := header.ICMPv6Checksum(header.ICMPv6ChecksumParams{
		Header: icmp,
		Src:    tcpip.AddrFrom16Slice(ip[8:24]),
		Dst:    tcpip.AddrFrom16Slice(ip[24:40]),
	})
	if got := icmp.Checksum(); got != want {
		t.Errorf("ICMPv6 checksum %#04x, want %#04x", got, want)
	}
}

func ethOf(t testing.TB, f []byte, dst, src [6]byte, et uint16) {
	t.Helper()
	if len(f) < 14 {
		t.Fatalf("frame of %d bytes", len(f))
	}
	if [6]byte(f[0:6]) != dst || [6]byte(f[6:12]) != src || binary.BigEndian.Uint16(f[12:]) != et {
		t.Errorf("Ethernet header %x, want dst %x src %x type %#04x", f[:14], dst, src, et)
	}
}

func TestPing4(t *testing.T) {
	h, w := newTestHost(t, false)
	data := []byte("0123456789abcdefghijklmnopqrstuvwxyz")
	w.send(echoRequest4(t, peerMAC, hostMAC, peer4, host4, 0x1234, 7, data))
	f := w.next()
	ethOf(t, f, peerMAC, hostMAC, etherTypeIPv4)
	ip := f[14:]
	checkIPv4Checksum(t, ip[:20])
	if ip[0] != 0x45 || ip[9] != 1 || ip[8] == 0 {
		t.Errorf("IPv4 header %x", ip[:20])
	}
	if netip.AddrFrom4([4]byte(ip[12:16])) != host4 || netip.AddrFrom4([4]byte(ip[16:20])) != peer4 {
		t.Errorf("addresses %x", ip[12:20])
	}
	tot := int(binary.BigEndian.Uint16(ip[2:]))
	icmp := ip[20:tot]
	checkICMPv4Checksum(t, icmp)
	if icmp[0] != 0 || icmp[1] != 0 || binary.BigEndian.Uint16(icmp[4:]) != 0x1234 || binary.BigEndian.Uint16(icmp[6:]) != 7 {
		t.Errorf("ICMP header %x", icmp[:8])
	}
	if !bytes.Equal(icmp[8:], data) {
		t.Errorf("echo data %q, want %q", icmp[8:], data)
	}
	c := h.Counters()
	if c.ICMPEchoRx != 1 || c.ICMPEchoTx != 1 {
		t.Errorf("counters %+v", c)
	}
	// Linux does not learn from ICMP, and neither does the host.
	if s, _ := h.neighborState(peer4); s != nudNone {
		t.Errorf("neighbour learned from a ping: %v", s)
	}
}

func TestPing6(t *testing.T) {
	h, w := newTestHost(t, false)
	data := []byte("ping6 data, odd length!")
	ip := ip6(peer6, host6, layers.IPProtocolICMPv6, 64)
	w.send(serialize(t, eth(peerMAC, hostMAC, layers.EthernetTypeIPv6), ip, icmp6Layer(ip, layers.ICMPv6TypeEchoRequest, 0),
		&layers.ICMPv6Echo{Identifier: 0x4321, SeqNumber: 9}, gopacket.Payload(data)))
	f := w.next()
	ethOf(t, f, peerMAC, hostMAC, etherTypeIPv6)
	rip := f[14:]
	if rip[0]>>4 != 6 || rip[6] != 58 || rip[7] != 64 {
		t.Errorf("IPv6 header %x", rip[:8])
	}
	if netip.AddrFrom16([16]byte(rip[8:24])) != host6 || netip.AddrFrom16([16]byte(rip[24:40])) != peer6 {
		t.Errorf("addresses %x", rip[8:40])
	}
	plen := int(binary.BigEndian.Uint16(rip[4:]))
	if plen != 8+len(data) {
		t.Fatalf("payload length %d", plen)
	}
	icmp := rip[40 : 40+plen]
	checkICMPv6Checksum(t, rip[:40+plen], 40)
	if icmp[0] != 129 || icmp[1] != 0 || binary.BigEndian.Uint16(icmp[4:]) != 0x4321 || binary.BigEndian.Uint16(icmp[6:]) != 9 {
		t.Errorf("ICMPv6 header %x", icmp[:8])
	}
	if !bytes.Equal(icmp[8:], data) {
		t.Errorf("echo data %q", icmp[8:])
	}
	if c := h.Counters(); c.ICMPEchoRx != 1 || c.ICMPEchoTx != 1 {
		t.Errorf("counters %+v", c)
	}
}

func udpFrame4(t testing.TB, dstMAC [6]byte, dip netip.Addr, dport uint16, payload []byte) []byte {
	ip := ip4(peer4, dip, layers.IPProtocolUDP)
	udp := &layers.UDP{SrcPort: 5555, DstPort: layers.UDPPort(dport)}
	udp.SetNetworkLayerForChecksum(ip)
	return serialize(t, eth(peerMAC, dstMAC, layers.EthernetTypeIPv4), ip, udp, gopacket.Payload(payload))
}

func TestPortUnreachable(t *testing.T) {
	h, w := newTestHost(t, false)
	req := udpFrame4(t, hostMAC, host4, 9999, []byte("hello"))
	w.send(req)
	f := w.next()
	ethOf(t, f, peerMAC, hostMAC, etherTypeIPv4)
	ip := f[14:]
	checkIPv4Checksum(t, ip[:20])
	tot := int(binary.BigEndian.Uint16(ip[2:]))
	icmp := ip[20:tot]
	checkICMPv4Checksum(t, icmp)
	if icmp[0] != 3 || icmp[1] != 3 {
		t.Errorf("ICMP type/code %d/%d, want 3/3", icmp[0], icmp[1])
	}
	reqIP := req[14 : 14+20+8+5] // gopacket padded the frame to 60 bytes: not part of the packet
	if !bytes.Equal(icmp[8:], reqIP) {
		t.Errorf("quoted packet %x, want %x", icmp[8:], reqIP)
	}

	// IPv6.
	ipl := ip6(peer6, host6, layers.IPProtocolUDP, 64)
	udp := &layers.UDP{SrcPort: 5555, DstPort: 9999}
	udp.SetNetworkLayerForChecksum(ipl)
	req6 := serialize(t, eth(peerMAC, hostMAC, layers.EthernetTypeIPv6), ipl, udp, gopacket.Payload("x"))
	w.send(req6)
	f = w.next()
	ethOf(t, f, peerMAC, hostMAC, etherTypeIPv6)
	rip := f[14:]
	plen := int(binary.BigEndian.Uint16(rip[4:]))
	checkICMPv6Checksum(t, rip[:40+plen], 40)
	if rip[40] != 1 || rip[41] != 4 || !bytes.Equal(rip[48:40+plen], req6[14:]) {
		t.Errorf("ICMPv6 %x", rip[40:40+plen])
	}
	if c := h.Counters(); c.PortUnreachableTx != 2 {
		t.Errorf("port_unreachable_tx %d", c.PortUnreachableTx)
	}
}

func TestPortUnreachableRateLimit(t *testing.T) {
	clk := clock.NewVirtual()
	h, w := newTestHost(t, false, func(c *HostConfig) { c.Clock = clk })
	for range icmpBurst + 5 {
		w.send(udpFrame4(t, hostMAC, host4, 9999, nil))
	}
	for range icmpBurst {
		w.next()
	}
	w.barrier()
	c := h.Counters()
	if c.PortUnreachableTx != icmpBurst || c.ICMPRateLimited != 5 {
		t.Errorf("sent %d, limited %d; want %d, 5", c.PortUnreachableTx, c.ICMPRateLimited, icmpBurst)
	}
	clk.RunFor(time.Second) // refills the bucket
	w.send(udpFrame4(t, hostMAC, host4, 9999, nil))
	w.next()
	w.barrier()
	if c := h.Counters(); c.PortUnreachableTx != icmpBurst+1 {
		t.Errorf("after a second: sent %d", c.PortUnreachableTx)
	}
}

func TestDrops(t *testing.T) {
	h, w := newTestHost(t, false)
	ping := echoRequest4(t, peerMAC, hostMAC, peer4, host4, 1, 1, nil)

	otherMACFrame := echoRequest4(t, peerMAC, otherMAC, peer4, host4, 1, 1, nil)
	otherIP := echoRequest4(t, peerMAC, hostMAC, peer4, netip.MustParseAddr("192.0.2.77"), 1, 1, nil)
	badSum := bytes.Clone(ping)
	badSum[14+10] ^= 0xff
	frag := bytes.Clone(ping)
	binary.BigEndian.PutUint16(frag[14+6:], 0x2000) // MF
	frag[14+10], frag[14+11] = 0, 0
	binary.BigEndian.PutUint16(frag[14+10:], ^checksum.Checksum(frag[14:34], 0))
	vlan := serialize(t, eth(peerMAC, hostMAC, layers.EthernetTypeDot1Q), &layers.Dot1Q{VLANIdentifier: 5, Type: layers.EthernetTypeIPv4},
		ip4(peer4, host4, layers.IPProtocolICMPv4), &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(8, 0)})
	badICMP := bytes.Clone(ping)
	badICMP[14+20+2] ^= 0xff
	truncated := ping[:14+10]
	badLen := bytes.Clone(ping)
	binary.BigEndian.PutUint16(badLen[14+2:], 1000)
	multicastOther := echoRequest4(t, peerMAC, [6]byte{0x33, 0x33, 0, 0, 0, 0x55}, peer4, host4, 1, 1, nil)

	for _, f := range [][]byte{otherMACFrame, otherIP, badSum, frag, vlan, badICMP, truncated, badLen, multicastOther} {
		w.send(f)
	}
	w.barrier()
	c := h.Counters()
	want := map[string]uint64{"NotForUs": 2, "NotOurIP": 1, "BadChecksum": 2, "Fragments": 1, "VLANDropped": 1, "Malformed": 2}
	got := reflect.ValueOf(c)
	for k, v := range want {
		if g := got.FieldByName(k).Uint(); g != v {
			t.Errorf("%s = %d, want %d", k, g, v)
		}
	}
	if c.ICMPEchoRx != 1 || c.ICMPEchoTx != 1 || c.RxFrames != 10 || c.TxFrames != 1 {
		t.Errorf("counters %+v", c)
	}
}

// roceFrame builds a RoCEv2 SEND Only frame with a valid ICRC.
func roceFrame(t testing.TB, src, dst [6]byte, sip, dip netip.Addr, tos uint8, payload []byte) []byte {
	t.Helper()
	e := wire.Encap{DstMAC: dst, SrcMAC: src, Src: sip, Dst: dip, TOS: tos, TTL: 64, DF: true, SrcPort: 0xC123, DstPort: wire.UDPPort}
	h := wire.Headers{BTH: wire.BTHFields{Opcode: wire.RCSendOnly, PKey: 0xFFFF, DestQP: 0x11, AckReq: true, PSN: 42}}
	f := wire.AppendFrame(nil, &e, &h, payload)
	var fr wire.Frame
	if err := fr.Decode(f, 0); err != nil || !fr.VerifyICRC() {
		t.Fatalf("test frame: %v", err)
	}
	return f
}

func TestRoCEReceive(t *testing.T) {
	h, w := newTestHost(t, false)
	got := make(chan []byte, 4)
	h.RoCE().SetReceiver(func(f []byte) { got <- bytes.Clone(f) })

	plain := roceFrame(t, peerMAC, hostMAC, peer4, host4, 0, []byte("payload"))
	ce := roceFrame(t, peerMAC, hostMAC, peer4, host4, 0x03, []byte("marked"))
	v6 := roceFrame(t, peerMAC, hostMAC, peer6, host6, 0x02, []byte("six"))
	for _, f := range [][]byte{plain, ce, v6} {
		w.send(f)
		select {
		case r := <-got:
			if !bytes.Equal(r, f) {
				t.Errorf("delivered %x, want %x", r, f)
			}
			var fr wire.Frame
			if err := fr.Decode(r, 0); err != nil || !fr.VerifyICRC() {
				t.Errorf("delivered frame does not decode: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no delivery")
		}
	}
	c := h.Counters()
	if c.RoCERx != 3 || c.CEMarked != 1 || c.ECTMarked != 1 {
		t.Errorf("roce_rx %d ce_marked %d ect_marked %d", c.RoCERx, c.CEMarked, c.ECTMarked)
	}
	// A RoCE frame for another address is not ours.
	w.send(roceFrame(t, peerMAC, hostMAC, peer4, netip.MustParseAddr("192.0.2.50"), 0, nil))
	// After Close of the endpoint nothing is delivered (and the host lives).
	h.RoCE().Close()
	w.send(plain)
	w.barrier()
	c = h.Counters()
	if c.NotOurIP != 1 || c.RoCENoReceiver != 1 || c.RoCERx != 3 {
		t.Errorf("counters %+v", c)
	}
	if err := h.RoCE().Send(plain); err == nil {
		t.Error("Send on a closed endpoint succeeded")
	}
}

func TestTCPDeliveryTrimsPadding(t *testing.T) {
	h, w := newTestHost(t, false)
	got := make(chan []byte, 1)
	h.SetTCP(func(p []byte) { got <- bytes.Clone(p) })
	ip := ip4(peer4, host4, layers.IPProtocolTCP)
	tcp := &layers.TCP{SrcPort: 40000, DstPort: 18515, SYN: true, Seq: 1, Window: 1000}
	tcp.SetNetworkLayerForChecksum(ip)
	f := serialize(t, eth(peerMAC, hostMAC, layers.EthernetTypeIPv4), ip, tcp)
	// gopacket pads the 54-byte frame to the 60-byte Ethernet minimum; make
	// the padding visible.
	if len(f) != 60 {
		t.Fatalf("test frame %d bytes", len(f))
	}
	copy(f[54:], []byte{0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA})
	w.send(f)
	select {
	case p := <-got:
		if len(p) != 40 || !bytes.Equal(p, f[14:54]) {
			t.Errorf("delivered %d bytes %x, want the 40-byte packet", len(p), p)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no TCP delivery")
	}
	h.SetTCP(nil)
	w.send(f)
	w.barrier()
	if c := h.Counters(); c.TCPRx != 1 || c.TCPNoHandler != 1 {
		t.Errorf("tcp_rx %d tcp_no_handler %d", c.TCPRx, c.TCPNoHandler)
	}
}

// TestReceiveAllocs proves the RoCE receive path allocates nothing.
func TestReceiveAllocs(t *testing.T) {
	a, _ := NewFramePipe()
	h, err := NewHost(HostConfig{IO: a, MAC: hostMAC, Prefixes: []netip.Prefix{
		netip.MustParsePrefix("192.0.2.1/24"), netip.MustParsePrefix("2001:db8::1/64")}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	n := 0
	h.RoCE().SetReceiver(func([]byte) { n++ })
	deliveredWithoutAllocs(t, &n, h.handleFrame,
		roceFrame(t, peerMAC, hostMAC, peer4, host4, 3, make([]byte, 1024)),
		roceFrame(t, peerMAC, hostMAC, peer6, host6, 0, make([]byte, 1024)))
}

// deliveredWithoutAllocs checks that handle passes each frame to the RoCE
// receiver (which counts in *n) and allocates nothing doing so.
func deliveredWithoutAllocs(t *testing.T, n *int, handle func([]byte), frames ...[]byte) {
	t.Helper()
	for _, f := range frames {
		before := *n
		if allocs := testing.AllocsPerRun(100, func() { handle(f) }); allocs != 0 {
			t.Errorf("%v allocations per received RoCE frame", allocs)
		}
		if *n == before {
			t.Error("frame not delivered")
		}
	}
}

func TestSendIP(t *testing.T) {
	h, w := newTestHost(t, false)
	// Learn the peer first (a gratuitous... no: a request to us creates it).
	w.send(arpFrame(t, peerMAC, broadcastMAC, arpRequest, peerMAC, peer4, [6]byte{}, host4))
	w.next() // our reply
	ip := ip4(host4, peer4, layers.IPProtocolTCP)
	tcp := &layers.TCP{SrcPort: 1, DstPort: 2, ACK: true}
	tcp.SetNetworkLayerForChecksum(ip)
	pkt := serialize(t, ip, tcp)
	orig := bytes.Clone(pkt)
	if err := h.SendIP(pkt); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(pkt, orig) {
		t.Error("SendIP modified its argument")
	}
	f := w.next()
	ethOf(t, f, peerMAC, hostMAC, etherTypeIPv4)
	if len(f) != 60 || !bytes.Equal(f[14:54], pkt) || !bytes.Equal(f[54:], make([]byte, 6)) {
		t.Errorf("frame %x: want the packet padded with zeros to 60 bytes", f)
	}
	// Off-link: no route. Over the MTU: refused. Not IP: refused.
	off := bytes.Clone(pkt)
	copy(off[16:20], []byte{10, 9, 8, 7})
	if err := h.SendIP(off); err == nil || !strings.Contains(err.Error(), "no route") {
		t.Errorf("off-link SendIP: %v", err)
	}
	if err := h.SendIP(append(bytes.Clone(pkt), make([]byte, 1500)...)); err == nil {
		t.Error("oversized SendIP accepted")
	}
	if err := h.SendIP([]byte{0x10, 0, 0}); err == nil {
		t.Error("garbage SendIP accepted")
	}
	c := h.Counters()
	if c.TCPTx != 1 || c.NoRoute != 1 || c.TooBig != 1 {
		t.Errorf("counters %+v", c)
	}
}

// TestConcurrentSends runs RoCE and TCP senders on many goroutines while
// the reader answers pings and resolution completes (for -race).
func TestConcurrentSends(t *testing.T) {
	h, w := newTestHost(t, false)
	frame := roceFrame(t, hostMAC, broadcastMAC, host4, peer4, 0, make([]byte, 64))
	var wg sync.WaitGroup
	const senders, each = 8, 50
	for i := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				if i%2 == 0 {
					h.RoCE().Send(frame)
				} else {
					h.SendIP(frame[14:])
				}
				h.Lookup(peer4)
			}
		}()
	}
	// Answer the first ARP request; meanwhile ping.
	for {
		f := w.next()
		if binary.BigEndian.Uint16(f[12:]) == etherTypeARP {
			w.send(arpFrame(t, peerMAC, hostMAC, arpReply, peerMAC, peer4, hostMAC, host4))
			break
		}
	}
	wg.Wait()
	w.drainUntilEcho()
	c := h.Counters()
	if c.RoCETx+c.TCPTx != senders*each {
		t.Errorf("accepted %d, want %d", c.RoCETx+c.TCPTx, senders*each)
	}
	// Every accepted frame went out or was dropped from the queue.
	out := c.TxFrames - c.ARPRequestsTx - c.ICMPEchoTx
	if out+c.QueueDropped != senders*each {
		t.Errorf("out %d + queue_dropped %d != %d", out, c.QueueDropped, senders*each)
	}
}

func TestCountersNamesMatch(t *testing.T) {
	pub := reflect.TypeOf(HostCounters{})
	live := reflect.TypeOf(hostCounters{})
	if pub.NumField() != live.NumField() {
		t.Fatalf("%d public counters, %d live ones", pub.NumField(), live.NumField())
	}
	for i := range pub.NumField() {
		if live.Field(i).Type != reflect.TypeOf(atomic.Uint64{}) {
			t.Errorf("live counter %s is a %v", live.Field(i).Name, live.Field(i).Type)
		}
		if !strings.EqualFold(pub.Field(i).Name, live.Field(i).Name) {
			t.Errorf("field %d: %s vs %s", i, pub.Field(i).Name, live.Field(i).Name)
		}
	}
}

func TestNewHostErrors(t *testing.T) {
	a, _ := NewFramePipe()
	good := HostConfig{IO: a, MAC: hostMAC, Prefixes: []netip.Prefix{netip.MustParsePrefix("192.0.2.1/24")}}
	for name, mod := range map[string]func(*HostConfig){
		"no IO":          func(c *HostConfig) { c.IO = nil },
		"zero MAC":       func(c *HostConfig) { c.MAC = [6]byte{} },
		"multicast MAC":  func(c *HostConfig) { c.MAC = [6]byte{1, 0, 0x5e, 0, 0, 1} },
		"no prefixes":    func(c *HostConfig) { c.Prefixes = nil },
		"tiny MTU":       func(c *HostConfig) { c.MTU = 100 },
		"multicast addr": func(c *HostConfig) { c.Prefixes = []netip.Prefix{netip.MustParsePrefix("ff02::1/64")} },
	} {
		cfg := good
		mod(&cfg)
		if _, err := NewHost(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	h, err := NewHost(good)
	if err != nil {
		t.Fatal(err)
	}
	if h.MAC() != hostMAC {
		t.Error("MAC()")
	}
	// Close without Start, twice.
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	h.Start() // after Close: nothing starts, nothing hangs
}
