package tap

import (
	"net/netip"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/rnic/rnic/transport/clock"
)

// discardIO is a FrameIO that drops writes and never delivers a frame, so
// that the fuzz target drives the receive path directly.
type discardIO struct{}

func (discardIO) ReadFrame([]byte) (int, error) { select {} }
func (discardIO) WriteFrame([]byte) error       { return nil }
func (discardIO) Close() error                  { return nil }

// FuzzHostInput feeds arbitrary frames to the receive path (on a virtual
// clock, with a TCP handler and a RoCE receiver installed): it must never
// panic, and every frame must be counted.
func FuzzHostInput(f *testing.F) {
	sn := solicitedNode(host6)
	ip := ip6(peer6, host6, layers.IPProtocolUDP, 64)
	udp6 := &layers.UDP{SrcPort: 1, DstPort: 2}
	udp6.SetNetworkLayerForChecksum(ip)
	tcpIP := ip4(peer4, host4, layers.IPProtocolTCP)
	tcp := &layers.TCP{SrcPort: 1, DstPort: 2, SYN: true}
	tcp.SetNetworkLayerForChecksum(tcpIP)
	seeds := [][]byte{
		arpFrame(f, peerMAC, broadcastMAC, arpRequest, peerMAC, peer4, [6]byte{}, host4),
		arpFrame(f, peerMAC, hostMAC, arpReply, peerMAC, peer4, hostMAC, host4),
		nsFrame(f, multicastMAC(sn), peer6, sn, host6, 255, peerMAC[:]),
		nsFrame(f, multicastMAC(sn), netip.IPv6Unspecified(), sn, host6, 255, nil),
		naFrame(f, peerMAC, hostMAC, peer6, host6, peer6, naFlagSolicited|naFlagOverride, peerMAC[:]),
		echoRequest4(f, peerMAC, hostMAC, peer4, host4, 1, 2, []byte("data")),
		udpFrame4(f, hostMAC, host4, 9999, []byte("x")),
		serialize(f, eth(peerMAC, hostMAC, layers.EthernetTypeIPv6), ip, udp6),
		serialize(f, eth(peerMAC, hostMAC, layers.EthernetTypeIPv4), tcpIP, tcp),
		roceFrame(f, peerMAC, hostMAC, peer4, host4, 3, []byte("roce")),
		roceFrame(f, peerMAC, hostMAC, peer6, host6, 0, []byte("roce6")),
		// multicast: a RoCE datagram to a joined group, an IGMP and an MLD query
		roceFrame(f, peerMAC, groupMAC(group4), peer4, group4, 0, []byte("group")),
		serialize(f, eth(peerMAC, groupMAC(allSystems), layers.EthernetTypeIPv4),
			&layers.IPv4{Version: 4, TTL: 1, Protocol: layers.IPProtocolIGMP, SrcIP: peer4.AsSlice(), DstIP: allSystems.AsSlice()},
			gopacket.Payload(igmpV2Query(netip.IPv4Unspecified()))),
		mldQuery(),
		{},
		make([]byte, 14),
	}
	for _, s := range seeds {
		f.Add(s)
	}
	clk := clock.NewVirtual()
	h, err := NewHost(HostConfig{IO: discardIO{}, MAC: hostMAC, Clock: clk, Prefixes: []netip.Prefix{
		netip.MustParsePrefix("192.0.2.1/24"), netip.MustParsePrefix("2001:db8::1/64"), netip.MustParsePrefix("fe80::1/64")}})
	if err != nil {
		f.Fatal(err)
	}
	h.SetTCP(func([]byte) {})
	h.RoCE().SetReceiver(func([]byte) {})
	for _, g := range []netip.Addr{group4, group6} { // so the multicast paths are reached
		if err := h.JoinGroup(g); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		before := h.Counters().RxFrames
		h.handleFrame(b)
		clk.RunFor(time.Minute) // fire whatever timers the frame armed
		if h.Counters().RxFrames != before+1 {
			t.Fatal("frame not counted")
		}
	})
}
