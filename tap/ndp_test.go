package tap

import (
	"bytes"
	"encoding/binary"
	"net"
	"net/netip"
	"testing"

	"github.com/gopacket/gopacket/layers"

	"github.com/rnic/rnic/transport/clock"
)

var peerLL = netip.MustParseAddr("fe80::2")

// nsFrame builds a Neighbor Solicitation with gopacket; slla nil: no option.
func nsFrame(t testing.TB, ethDst [6]byte, src, dst, target netip.Addr, hop uint8, slla []byte) []byte {
	t.Helper()
	ip := ip6(src, dst, layers.IPProtocolICMPv6, hop)
	ns := &layers.ICMPv6NeighborSolicitation{TargetAddress: target.AsSlice()}
	if slla != nil {
		ns.Options = layers.ICMPv6Options{{Type: layers.ICMPv6OptSourceAddress, Data: slla}}
	}
	return serialize(t, eth(peerMAC, ethDst, layers.EthernetTypeIPv6), ip, icmp6Layer(ip, layers.ICMPv6TypeNeighborSolicitation, 0), ns)
}

// naFrame builds a Neighbor Advertisement; tlla nil: no option.
func naFrame(t testing.TB, src [6]byte, ethDst [6]byte, sip, dip, target netip.Addr, flags uint8, tlla []byte) []byte {
	t.Helper()
	ip := ip6(sip, dip, layers.IPProtocolICMPv6, 255)
	na := &layers.ICMPv6NeighborAdvertisement{Flags: flags, TargetAddress: target.AsSlice()}
	if tlla != nil {
		na.Options = layers.ICMPv6Options{{Type: layers.ICMPv6OptTargetAddress, Data: tlla}}
	}
	return serialize(t, eth(src, ethDst, layers.EthernetTypeIPv6), ip, icmp6Layer(ip, layers.ICMPv6TypeNeighborAdvertisement, 0), na)
}

// wantND checks an NS or NA from the host field by field.
func wantND(t testing.TB, f []byte, ethDst [6]byte, src, dst netip.Addr, typ, flags uint8, target netip.Addr, opt uint8) {
	t.Helper()
	ethOf(t, f, ethDst, hostMAC, etherTypeIPv6)
	ip := f[14:]
	if len(ip) < 40+32 {
		t.Fatalf("short ND frame %x", f)
	}
	plen := int(binary.BigEndian.Uint16(ip[4:]))
	if plen != 32 || ip[6] != 58 || ip[7] != 255 || ip[0] != 0x60 {
		t.Errorf("IPv6 header %x: want payload 32, next 58, hop limit 255", ip[:8])
	}
	if netip.AddrFrom16([16]byte(ip[8:24])) != src || netip.AddrFrom16([16]byte(ip[24:40])) != dst {
		t.Errorf("addresses %v → %v, want %v → %v", netip.AddrFrom16([16]byte(ip[8:24])), netip.AddrFrom16([16]byte(ip[24:40])), src, dst)
	}
	checkICMPv6Checksum(t, ip[:40+plen], 40)
	m := ip[40 : 40+plen]
	if m[0] != typ || m[1] != 0 || m[4] != flags || !bytes.Equal(m[5:8], []byte{0, 0, 0}) {
		t.Errorf("ICMPv6 type %d code %d flags %#x, want %d 0 %#x", m[0], m[1], m[4], typ, flags)
	}
	if netip.AddrFrom16([16]byte(m[8:24])) != target {
		t.Errorf("target %v, want %v", netip.AddrFrom16([16]byte(m[8:24])), target)
	}
	if m[24] != opt || m[25] != 1 || [6]byte(m[26:32]) != hostMAC {
		t.Errorf("option %x, want type %d len 1 %x", m[24:32], opt, hostMAC)
	}
}

func TestNSAnswered(t *testing.T) {
	h, w := newTestHost(t, false)
	sn := solicitedNode(host6)
	w.send(nsFrame(t, multicastMAC(sn), peer6, sn, host6, 255, peerMAC[:]))
	wantND(t, w.next(), peerMAC, host6, peer6, 136, naFlagSolicited|naFlagOverride, host6, ndOptTargetLLA)
	if s, mac := h.neighborState(peer6); s != nudStale || mac != peerMAC {
		t.Errorf("peer learned as %v %x, want STALE", s, mac)
	}
	// DAD probe for our address: defended to all nodes, S=0.
	w.send(nsFrame(t, multicastMAC(sn), netip.IPv6Unspecified(), sn, host6, 255, nil))
	wantND(t, w.next(), [6]byte{0x33, 0x33, 0, 0, 0, 1}, host6, allNodes, 136, naFlagOverride, host6, ndOptTargetLLA)
	// Unicast NS to our link-local address, answered from it.
	w.send(nsFrame(t, hostMAC, peerLL, hostLL, hostLL, 255, peerMAC[:]))
	wantND(t, w.next(), peerMAC, hostLL, peerLL, 136, naFlagSolicited|naFlagOverride, hostLL, ndOptTargetLLA)
	if c := h.Counters(); c.NDNSRx != 3 || c.NDNATx != 3 {
		t.Errorf("counters %+v", c)
	}
}

func TestNDInvalid(t *testing.T) {
	h, w := newTestHost(t, false)
	sn := solicitedNode(host6)
	w.send(nsFrame(t, multicastMAC(sn), peer6, sn, host6, 64, peerMAC[:])) // hop limit
	bad := nsFrame(t, multicastMAC(sn), peer6, sn, host6, 255, peerMAC[:])
	bad[len(bad)-1] ^= 1 // checksum no longer matches
	w.send(bad)
	code := nsFrame(t, multicastMAC(sn), peer6, sn, host6, 255, peerMAC[:])
	code[14+40+1] = 1
	binary.BigEndian.PutUint16(code[14+40+2:], binary.BigEndian.Uint16(code[14+40+2:])-1) // keep the checksum right
	w.send(code)
	zeroOpt := nsFrame(t, multicastMAC(sn), peer6, sn, host6, 255, peerMAC[:])
	zeroOpt[14+40+25] = 0 // option length 0
	binary.BigEndian.PutUint16(zeroOpt[14+40+2:], binary.BigEndian.Uint16(zeroOpt[14+40+2:])+1)
	w.send(zeroOpt)
	// DAD probe with a source link-layer option: invalid.
	w.send(nsFrame(t, multicastMAC(sn), netip.IPv6Unspecified(), sn, host6, 255, peerMAC[:]))
	// NS for someone else's address, and a router advertisement: ignored.
	w.send(nsFrame(t, hostMAC, peerLL, host6, peer6, 255, peerMAC[:]))
	ip := ip6(peerLL, allNodes, layers.IPProtocolICMPv6, 255)
	w.send(serialize(t, eth(peerMAC, [6]byte{0x33, 0x33, 0, 0, 0, 1}, layers.EthernetTypeIPv6), ip,
		icmp6Layer(ip, layers.ICMPv6TypeRouterAdvertisement, 0), &layers.ICMPv6RouterAdvertisement{HopLimit: 64}))
	w.barrier()
	c := h.Counters()
	if c.NDInvalid != 4 || c.BadChecksum != 1 || c.NDIgnored != 2 || c.NDNATx != 0 {
		t.Errorf("nd_invalid %d bad_checksum %d nd_ignored %d nd_na_tx %d; want 4 1 2 0", c.NDInvalid, c.BadChecksum, c.NDIgnored, c.NDNATx)
	}
}

func TestResolveIPv6(t *testing.T) {
	h, w := newTestHost(t, false)
	frame := roceFrame(t, hostMAC, broadcastMAC, host6, peer6, 0, []byte("v6 held"))
	if err := h.RoCE().Send(frame); err != nil {
		t.Fatal(err)
	}
	sn := solicitedNode(peer6)
	if mac := multicastMAC(sn); mac != [6]byte{0x33, 0x33, 0xff, 0, 0, 2} {
		t.Fatalf("solicited-node MAC %x", mac)
	}
	wantND(t, w.next(), [6]byte{0x33, 0x33, 0xff, 0, 0, 2}, host6, netip.MustParseAddr("ff02::1:ff00:2"), 135, 0, peer6, ndOptSourceLLA)
	w.send(naFrame(t, peerMAC, hostMAC, peer6, host6, peer6, naFlagSolicited|naFlagOverride, peerMAC[:]))
	checkHeld(t, w.next(), frame, peerMAC)
	if s, _ := h.neighborState(peer6); s != nudReachable {
		t.Errorf("state %v", s)
	}
	// Link-local targets are on link, solicited from our link-local address.
	if _, ok := h.Lookup(peerLL); ok {
		t.Fatal("hit")
	}
	wantND(t, w.next(), multicastMAC(solicitedNode(peerLL)), hostLL, solicitedNode(peerLL), 135, 0, peerLL, ndOptSourceLLA)
	// An NA without override and another MAC: the REACHABLE entry keeps its
	// MAC but becomes STALE (RFC 4861 §7.2.5).
	other := [6]byte{0x02, 0, 0, 0, 0, 0x77}
	w.send(naFrame(t, other, hostMAC, peer6, host6, peer6, naFlagSolicited, other[:]))
	w.barrier()
	if s, mac := h.neighborState(peer6); s != nudStale || mac != peerMAC {
		t.Errorf("after NA O=0: %v %x, want STALE %x", s, mac, peerMAC)
	}
	// An NA for a neighbour we have no entry for creates nothing.
	w.send(naFrame(t, other, [6]byte{0x33, 0x33, 0, 0, 0, 1}, netip.MustParseAddr("2001:db8::9"), allNodes, netip.MustParseAddr("2001:db8::9"), naFlagOverride, other[:]))
	w.barrier()
	if s, _ := h.neighborState(netip.MustParseAddr("2001:db8::9")); s != nudNone {
		t.Errorf("entry from an unsolicited NA: %v", s)
	}
}

func TestProbeIPv6(t *testing.T) {
	clk := clock.NewVirtual()
	ncfg := NeighborConfig{}.withDefaults()
	h, w := newTestHost(t, false, withClock(clk))
	sn := solicitedNode(host6)
	w.send(nsFrame(t, multicastMAC(sn), peer6, sn, host6, 255, peerMAC[:]))
	w.next() // our NA; the peer is STALE now
	frame := roceFrame(t, hostMAC, broadcastMAC, host6, peer6, 0, []byte("x"))
	h.RoCE().Send(frame)
	checkHeld(t, w.next(), frame, peerMAC)
	clk.RunFor(ncfg.DelayFirstProbe)
	// The probe is a unicast NS to the neighbour's address and MAC.
	wantND(t, w.next(), peerMAC, host6, peer6, 135, 0, peer6, ndOptSourceLLA)
	w.send(naFrame(t, peerMAC, hostMAC, peer6, host6, peer6, naFlagSolicited, nil)) // no TLLA: confirms the cached MAC
	w.barrier()
	if s, mac := h.neighborState(peer6); s != nudReachable || mac != peerMAC {
		t.Errorf("after the NA: %v %x", s, mac)
	}
}

func TestStartAnnouncesIPv6(t *testing.T) {
	h, w := newTestHost(t, true)
	wantARP(t, w.next(), broadcastMAC, arpRequest, hostMAC, host4, [6]byte{}, host4)
	// The MLDv2 report.
	f := w.next()
	ethOf(t, f, [6]byte{0x33, 0x33, 0, 0, 0, 0x16}, hostMAC, etherTypeIPv6)
	p := decode(f)
	ip, _ := p.Layer(layers.LayerTypeIPv6).(*layers.IPv6)
	if ip == nil || ip.HopLimit != 1 || !ip.SrcIP.Equal(net.ParseIP("fe80::1")) || !ip.DstIP.Equal(net.ParseIP("ff02::16")) {
		t.Fatalf("MLD report IPv6 header:\n%s", p.Dump())
	}
	hbh, _ := p.Layer(layers.LayerTypeIPv6HopByHop).(*layers.IPv6HopByHop)
	if hbh == nil || len(hbh.Options) == 0 || hbh.Options[0].OptionType != 5 {
		t.Errorf("no Router Alert option:\n%s", p.Dump())
	}
	rep, _ := p.Layer(layers.LayerTypeMLDv2MulticastListenerReport).(*layers.MLDv2MulticastListenerReportMessage)
	if rep == nil {
		t.Fatalf("not an MLDv2 report:\n%s", p.Dump())
	}
	// 2001:db8::1 and fe80::1 share one solicited-node group.
	if len(rep.MulticastAddressRecords) != 1 {
		t.Fatalf("%d records, want 1", len(rep.MulticastAddressRecords))
	}
	r := rep.MulticastAddressRecords[0]
	if r.RecordType != layers.MLDv2MulticastAddressRecordTypeChangeToExcludeMode || r.N != 0 || !r.MulticastAddress.Equal(net.ParseIP("ff02::1:ff00:1")) {
		t.Errorf("record %+v", r)
	}
	checkICMPv6Checksum(t, f[14:], 48)
	// The unsolicited NAs, one per address.
	for _, a := range []netip.Addr{host6, hostLL} {
		wantND(t, w.next(), [6]byte{0x33, 0x33, 0, 0, 0, 1}, a, allNodes, 136, naFlagOverride, a, ndOptTargetLLA)
	}
	if c := h.Counters(); c.MLDReportTx != 1 || c.NDNATx != 2 || c.ARPRequestsTx != 1 {
		t.Errorf("counters %+v", c)
	}
}
