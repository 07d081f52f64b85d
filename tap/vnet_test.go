package tap

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/rnic/rnic/transport/clock"
)

// vnetWrite is one frame a vnetFake was given, with its header.
type vnetWrite struct {
	v     VnetHdr
	frame []byte
}

// vnetFake is an offload IO that records writes and never delivers a
// frame: the tests drive handleVnetFrame themselves.
type vnetFake struct{ writes chan vnetWrite }

func (f *vnetFake) ReadFrame([]byte) (int, error) { select {} }
func (f *vnetFake) ReadVnet([]byte) (int, error)  { select {} }
func (f *vnetFake) WriteFrame(b []byte) error     { return f.WriteVnet(VnetHdr{}, b) }
func (f *vnetFake) WriteVnet(v VnetHdr, b []byte) error {
	select {
	case f.writes <- vnetWrite{v, bytes.Clone(b)}:
	default: // a full wire drops (the fuzz target never reads it)
	}
	return nil
}
func (f *vnetFake) Close() error  { return nil }
func (f *vnetFake) Offload() bool { return true }

// newVnetHost is a Host on a vnetFake, not started, with a virtual clock,
// receivers that collect what they get.
func newVnetHost(t testing.TB) (h *Host, io *vnetFake, tcp, roce chan []byte) {
	io = &vnetFake{writes: make(chan vnetWrite, 64)}
	h, err := NewHost(HostConfig{IO: io, MAC: hostMAC, Clock: clock.NewVirtual(), Prefixes: []netip.Prefix{
		netip.MustParsePrefix("192.0.2.1/24"), netip.MustParsePrefix("2001:db8::1/64")}})
	if err != nil {
		t.Fatal(err)
	}
	if !h.Offload() {
		t.Fatal("Host on an offload IO reports no offload")
	}
	tcp, roce = make(chan []byte, 16), make(chan []byte, 16)
	h.SetTCP(func(p []byte) { tcp <- bytes.Clone(p) })
	h.RoCE().SetReceiver(func(f []byte) { roce <- bytes.Clone(f) })
	return h, io, tcp, roce
}

// withVnet prefixes frame with v.
func withVnet(v VnetHdr, frame []byte) []byte {
	b := make([]byte, vnetHdrLen+len(frame))
	v.put(b)
	copy(b[vnetHdrLen:], frame)
	return b
}

// tcpFrame4 is a TCP/IPv4 frame from the peer to the host with n bytes of
// payload and a correct checksum, whatever the MTU.
func tcpFrame4(t testing.TB, n int) []byte {
	ip := ip4(peer4, host4, layers.IPProtocolTCP)
	tcp := &layers.TCP{SrcPort: 5000, DstPort: 6000, Seq: 1, ACK: true, Ack: 1, Window: 1000}
	tcp.SetNetworkLayerForChecksum(ip)
	payload := make([]byte, n)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	return serialize(t, eth(peerMAC, hostMAC, layers.EthernetTypeIPv4), ip, tcp, gopacket.Payload(payload))
}

// partial replaces the transport checksum at csumAt of a finished frame by
// the pseudo-header sum the kernel leaves with NEEDS_CSUM, and returns it
// with the header that says so.
func partial(frame []byte, csumStart, csumOffset int, pseudo uint32) (VnetHdr, []byte) {
	f := bytes.Clone(frame)
	binary.BigEndian.PutUint16(f[csumStart+csumOffset:], checksumFold(pseudo))
	return VnetHdr{Flags: vnetFlagNeedsCsum, CsumStart: uint16(csumStart), CsumOffset: uint16(csumOffset)}, f
}

// pseudoSum4 is the IPv4 pseudo-header accumulator of the packet ip.
func pseudoSum4(ip []byte, proto uint8, n int) uint32 {
	return onesSum(0, ip[12:20]) + uint32(proto) + uint32(n)
}

// TestVnetReceivePartialChecksum: a TCP super-segment over the MTU with a
// partial checksum reaches the TCP handler whole with the checksum
// finished; a RoCEv2/IPv6 frame with a partial UDP checksum reaches the
// RoCE receiver with it finished (the frame as it was before the kernel
// left it partial).
func TestVnetReceivePartialChecksum(t *testing.T) {
	h, _, tcp, roce := newVnetHost(t)
	big := tcpFrame4(t, 20000)
	ip := big[ethHeaderLen:]
	v, f := partial(big, ethHeaderLen+ipv4HeaderLen, 16, pseudoSum4(ip, ipProtoTCP, len(ip)-ipv4HeaderLen))
	v.GSOType, v.GSOSize, v.HdrLen = vnetGSOTCPv4, 1448, ethHeaderLen+ipv4HeaderLen+20
	if bytes.Equal(f, big) {
		t.Fatal("test frame: partial checksum equals the full one")
	}
	h.handleVnetFrame(withVnet(v, f))
	select {
	case got := <-tcp:
		if !bytes.Equal(got, big[ethHeaderLen:]) {
			t.Errorf("TCP handler got %d bytes, not the finished super-segment", len(got))
		}
	default:
		t.Fatalf("super-segment not delivered; counters %+v", h.Counters())
	}

	rf := roceFrame(t, peerMAC, hostMAC, peer6, host6, 0, []byte("partial checksum"))
	ip6b := rf[ethHeaderLen:]
	udpLen := len(ip6b) - ipv6HeaderLen
	if binary.BigEndian.Uint16(ip6b[ipv6HeaderLen+6:]) == 0 {
		t.Fatal("test frame: RoCEv2/IPv6 without a UDP checksum")
	}
	v, f = partial(rf, ethHeaderLen+ipv6HeaderLen, 6, pseudoSum6(ip6b, ipProtoUDP, udpLen))
	h.handleVnetFrame(withVnet(v, f))
	select {
	case got := <-roce:
		if !bytes.Equal(got, rf) {
			t.Errorf("RoCE receiver got\n%x, want\n%x", got, rf)
		}
	default:
		t.Fatalf("RoCE frame not delivered; counters %+v", h.Counters())
	}
	c := h.Counters()
	if c.GSORx != 1 || c.CsumFinished != 2 || c.VnetMalformed != 0 {
		t.Errorf("gso_rx %d (want 1), csum_finished %d (want 2), vnet_malformed %d", c.GSORx, c.CsumFinished, c.VnetMalformed)
	}
}

// TestVnetMalformedDropped: each malformed virtio_net_hdr is counted and
// its frame dropped, never delivered; a plain frame over the MTU is
// malformed too.
func TestVnetMalformedDropped(t *testing.T) {
	h, _, tcp, roce := newVnetHost(t)
	small := tcpFrame4(t, 100)
	big := tcpFrame4(t, 3000)
	gso := VnetHdr{Flags: vnetFlagNeedsCsum, GSOType: vnetGSOTCPv4, GSOSize: 1448, CsumStart: 34, CsumOffset: 16, HdrLen: 54}
	cases := []struct {
		name string
		b    []byte
	}{
		{"short", make([]byte, vnetHdrLen-1)},
		{"unknown flag", withVnet(VnetHdr{Flags: 4}, small)},
		{"csum past the end", withVnet(VnetHdr{Flags: vnetFlagNeedsCsum, CsumStart: 34, CsumOffset: uint16(len(small))}, small)},
		{"csum in the Ethernet header", withVnet(VnetHdr{Flags: vnetFlagNeedsCsum, CsumStart: 2}, small)},
		{"gso udp", withVnet(VnetHdr{Flags: vnetFlagNeedsCsum, GSOType: 5, GSOSize: 1000, CsumStart: 34, CsumOffset: 6}, big)},
		{"gso ecn", withVnet(VnetHdr{Flags: vnetFlagNeedsCsum, GSOType: vnetGSOTCPv4 | 0x80, GSOSize: 1448, CsumStart: 34, CsumOffset: 16}, big)},
		{"gso size 0", withVnet(VnetHdr{Flags: vnetFlagNeedsCsum, GSOType: vnetGSOTCPv4, CsumStart: 34, CsumOffset: 16}, big)},
		{"gso without partial checksum", withVnet(VnetHdr{GSOType: vnetGSOTCPv4, GSOSize: 1448}, big)},
		{"gso v6 on IPv4", withVnet(VnetHdr{Flags: vnetFlagNeedsCsum, GSOType: vnetGSOTCPv6, GSOSize: 1448, CsumStart: 34, CsumOffset: 16}, big)},
		{"gso on a runt", withVnet(gso, small[:12])},
	}
	for _, c := range cases {
		before := h.Counters()
		h.handleVnetFrame(c.b)
		after := h.Counters()
		if after.VnetMalformed != before.VnetMalformed+1 || after.RxFrames != before.RxFrames+1 {
			t.Errorf("%s: vnet_malformed %d→%d, rx_frames %d→%d", c.name, before.VnetMalformed, after.VnetMalformed, before.RxFrames, after.RxFrames)
		}
	}
	before := h.Counters().Malformed
	h.handleVnetFrame(withVnet(VnetHdr{}, big)) // 3054 bytes, MTU 1500, not a super-segment
	if got := h.Counters().Malformed; got != before+1 {
		t.Errorf("oversized plain frame: malformed %d→%d", before, got)
	}
	select {
	case p := <-tcp:
		t.Errorf("a malformed frame reached the TCP handler (%d bytes)", len(p))
	case f := <-roce:
		t.Errorf("a malformed frame reached the RoCE receiver (%d bytes)", len(f))
	default:
	}
}

// TestVnetSendSuperSegment: a TCP packet over the MTU sent with offload
// goes out whole behind a header that asks the kernel to segment it at the
// MSS and finish its checksum; queued while its neighbour is resolved, it
// keeps that header. A packet within the MSS gets the checksum flag only,
// and the Host's own frames a zero header.
func TestVnetSendSuperSegment(t *testing.T) {
	h, io, _, _ := newVnetHost(t)
	ip := bytes.Clone(tcpFrame4(t, 10000)[ethHeaderLen:])
	copy(ip[12:16], host4.AsSlice()) // from us to the peer
	copy(ip[16:20], peer4.AsSlice())
	o := TxOffload{NeedsCsum: true, L3HdrLen: ipv4HeaderLen, CsumOffset: 16, MSS: 1448}
	if err := h.SendIPOffload(ip, o); err != nil {
		t.Fatal(err)
	}
	arp := <-io.writes // the resolution; the super-segment waits
	if arp.v != (VnetHdr{}) || binary.BigEndian.Uint16(arp.frame[12:]) != etherTypeARP {
		t.Fatalf("first write: %+v %x, want an ARP request behind a zero header", arp.v, arp.frame[:14])
	}
	h.handleVnetFrame(withVnet(VnetHdr{}, arpFrame(t, peerMAC, hostMAC, arpReply, peerMAC, peer4, hostMAC, host4)))
	w := <-io.writes
	want := VnetHdr{Flags: vnetFlagNeedsCsum, GSOType: vnetGSOTCPv4, GSOSize: 1448,
		HdrLen: ethHeaderLen + ipv4HeaderLen + 20, CsumStart: ethHeaderLen + ipv4HeaderLen, CsumOffset: 16}
	if w.v != want {
		t.Errorf("header %+v, want %+v", w.v, want)
	}
	if !bytes.Equal(w.frame[ethHeaderLen:], ip) || [6]byte(w.frame[0:6]) != peerMAC {
		t.Errorf("frame is not the packet to the peer's MAC")
	}
	if err := h.SendIPOffload(ip[:ipv4HeaderLen+20+1000], o); err != nil {
		t.Fatal(err)
	}
	if w := <-io.writes; w.v != (VnetHdr{Flags: vnetFlagNeedsCsum, CsumStart: 34, CsumOffset: 16}) {
		t.Errorf("packet within the MSS: header %+v", w.v)
	}
	c := h.Counters()
	if c.GSOTx != 1 || c.GSOTxSegments != 7 {
		t.Errorf("gso_tx %d (want 1), gso_tx_segments %d (want 7 = ⌈10000/1448⌉)", c.GSOTx, c.GSOTxSegments)
	}
}

// TestVnetSendFrame: SendFrame, framing the packet in the room before it,
// writes what SendIPOffload writes for the packet alone, and counts the
// same.
func TestVnetSendFrame(t *testing.T) {
	h, io, _, _ := newVnetHost(t)
	h.handleVnetFrame(withVnet(VnetHdr{}, arpFrame(t, peerMAC, hostMAC, arpReply, peerMAC, peer4, hostMAC, host4)))
	ip := bytes.Clone(tcpFrame4(t, 10000)[ethHeaderLen:])
	copy(ip[12:16], host4.AsSlice())
	copy(ip[16:20], peer4.AsSlice())
	o := TxOffload{NeedsCsum: true, L3HdrLen: ipv4HeaderLen, CsumOffset: 16, MSS: 1448}
	small := ip[:ipv4HeaderLen+20+1000]
	for _, c := range []struct {
		ip []byte
		o  TxOffload
	}{{ip, o}, {small, TxOffload{NeedsCsum: true, L3HdrLen: ipv4HeaderLen, CsumOffset: 16}}} {
		ip, o := c.ip, c.o
		before := h.Counters()
		if err := h.SendIPOffload(ip, o); err != nil {
			t.Fatal(err)
		}
		want := <-io.writes
		mid := h.Counters()
		frame := append(make([]byte, FrameHeadroom), ip...)
		if err := h.SendFrame(frame, o); err != nil {
			t.Fatal(err)
		}
		got := <-io.writes
		if got.v != want.v || !bytes.Equal(got.frame, want.frame) {
			t.Errorf("offload %+v: SendFrame wrote %+v %x..., SendIPOffload %+v %x...", o, got.v, got.frame[:34], want.v, want.frame[:34])
		}
		after := h.Counters()
		if after.GSOTx-mid.GSOTx != mid.GSOTx-before.GSOTx || after.TCPTx-mid.TCPTx != 1 || after.GSOTxSegments-mid.GSOTxSegments != mid.GSOTxSegments-before.GSOTxSegments {
			t.Errorf("offload %+v: counters differ: %+v, %+v, %+v", o, before, mid, after)
		}
	}
	if err := h.SendFrame(make([]byte, FrameHeadroom-1), TxOffload{}); err == nil {
		t.Error("SendFrame of a frame shorter than the headroom succeeded")
	}
}

// FuzzHostVnetInput feeds arbitrary header+frame bytes to the offload
// receive path: it must never panic, and every frame must be counted.
func FuzzHostVnetInput(f *testing.F) {
	big := tcpFrame4(f, 3000)
	f.Add(withVnet(VnetHdr{}, arpFrame(f, peerMAC, broadcastMAC, arpRequest, peerMAC, peer4, [6]byte{}, host4)))
	f.Add(withVnet(VnetHdr{Flags: vnetFlagNeedsCsum, GSOType: vnetGSOTCPv4, GSOSize: 1448, CsumStart: 34, CsumOffset: 16, HdrLen: 54}, big))
	f.Add(withVnet(VnetHdr{Flags: vnetFlagNeedsCsum, CsumStart: 54, CsumOffset: 6}, roceFrame(f, peerMAC, hostMAC, peer6, host6, 0, []byte("x"))))
	f.Add(withVnet(VnetHdr{Flags: vnetFlagDataValid}, tcpFrame4(f, 10)))
	f.Add([]byte{})
	h, _, tcp, roce := newVnetHost(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		before := h.Counters().RxFrames
		h.handleVnetFrame(b)
		if h.Counters().RxFrames != before+1 {
			t.Fatal("frame not counted")
		}
		for len(tcp) > 0 {
			<-tcp
		}
		for len(roce) > 0 {
			<-roce
		}
	})
}

// TestVnetReceiveAllocs: the offload receive path allocates nothing, a
// partial checksum finished or not.
func TestVnetReceiveAllocs(t *testing.T) {
	io := &vnetFake{writes: make(chan vnetWrite, 1)}
	h, err := NewHost(HostConfig{IO: io, MAC: hostMAC, Prefixes: []netip.Prefix{
		netip.MustParsePrefix("192.0.2.1/24"), netip.MustParsePrefix("2001:db8::1/64")}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	n := 0
	h.RoCE().SetReceiver(func([]byte) { n++ })
	rf := roceFrame(t, peerMAC, hostMAC, peer6, host6, 0, make([]byte, 1024))
	ip := rf[ethHeaderLen:]
	v, pf := partial(rf, ethHeaderLen+ipv6HeaderLen, 6, pseudoSum6(ip, ipProtoUDP, len(ip)-ipv6HeaderLen))
	deliveredWithoutAllocs(t, &n, h.handleVnetFrame, withVnet(VnetHdr{}, rf), withVnet(v, pf))
}

// TestFinishChecksumZero: a finished checksum whose sum is zero is 0x0000
// in TCP (RFC 1624; Wireshark flags 0xFFFF) and 0xFFFF in UDP, where 0
// means "no checksum" (RFC 768).
func TestFinishChecksumZero(t *testing.T) {
	tcp := make([]byte, 20)
	tcp[18], tcp[19] = 0xFF, 0xFF // the data sum to 0xFFFF: the checksum is zero
	finishChecksum(tcp, VnetHdr{CsumStart: 0, CsumOffset: 16})
	if got := binary.BigEndian.Uint16(tcp[16:]); got != 0 {
		t.Errorf("TCP checksum of a zero sum = %#04x, want 0x0000", got)
	}
	udp := make([]byte, 8)
	udp[0], udp[1] = 0xFF, 0xFF
	finishChecksum(udp, VnetHdr{CsumStart: 0, CsumOffset: 6})
	if got := binary.BigEndian.Uint16(udp[6:]); got != 0xFFFF {
		t.Errorf("UDP checksum of a zero sum = %#04x, want 0xffff", got)
	}
}
