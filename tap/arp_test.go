package tap

import (
	"bytes"
	"net"
	"net/netip"
	"testing"

	"github.com/gopacket/gopacket/layers"
)

// arpFrame builds an Ethernet/IPv4 ARP frame with gopacket.
func arpFrame(t testing.TB, src, dst [6]byte, op uint16, sha [6]byte, spa netip.Addr, tha [6]byte, tpa netip.Addr) []byte {
	t.Helper()
	return serialize(t, eth(src, dst, layers.EthernetTypeARP), &layers.ARP{
		AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4, HwAddressSize: 6, ProtAddressSize: 4,
		Operation: op, SourceHwAddress: net.HardwareAddr(sha[:]), SourceProtAddress: spa.AsSlice(),
		DstHwAddress: net.HardwareAddr(tha[:]), DstProtAddress: tpa.AsSlice(),
	})
}

// wantARP decodes f as ARP and checks every field.
func wantARP(t testing.TB, f []byte, ethDst [6]byte, op uint16, sha [6]byte, spa netip.Addr, tha [6]byte, tpa netip.Addr) {
	t.Helper()
	ethOf(t, f, ethDst, hostMAC, etherTypeARP)
	p := decode(f)
	a, _ := p.Layer(layers.LayerTypeARP).(*layers.ARP)
	if a == nil {
		t.Fatalf("not ARP:\n%s", p.Dump())
	}
	if a.AddrType != layers.LinkTypeEthernet || a.Protocol != layers.EthernetTypeIPv4 || a.HwAddressSize != 6 || a.ProtAddressSize != 4 {
		t.Errorf("ARP fixed fields %+v", a)
	}
	if a.Operation != op || !bytes.Equal(a.SourceHwAddress, sha[:]) || !bytes.Equal(a.SourceProtAddress, spa.AsSlice()) ||
		!bytes.Equal(a.DstHwAddress, tha[:]) || !bytes.Equal(a.DstProtAddress, tpa.AsSlice()) {
		t.Errorf("ARP op %d sha %v spa %v tha %v tpa %v; want %d %x %v %x %v", a.Operation,
			net.HardwareAddr(a.SourceHwAddress), net.IP(a.SourceProtAddress), net.HardwareAddr(a.DstHwAddress), net.IP(a.DstProtAddress),
			op, sha, spa, tha, tpa)
	}
	if len(f) != 60 {
		t.Errorf("ARP frame of %d bytes, want 60 (padded to the Ethernet minimum)", len(f))
	}
}

func TestARPReply(t *testing.T) {
	h, w := newTestHost(t, false)
	w.send(arpFrame(t, peerMAC, broadcastMAC, arpRequest, peerMAC, peer4, [6]byte{}, host4))
	wantARP(t, w.next(), peerMAC, arpReply, hostMAC, host4, peerMAC, peer4)
	c := h.Counters()
	if c.ARPRequestsRx != 1 || c.ARPRepliesTx != 1 {
		t.Errorf("counters %+v", c)
	}
	// A request addressed to us creates the asker's entry, STALE (it was
	// not a confirmation).
	if s, mac := h.neighborState(peer4); s != nudStale || mac != peerMAC {
		t.Errorf("peer entry %v %x, want STALE %x", s, mac, peerMAC)
	}
	// An RFC 5227 probe (sender 0.0.0.0) is answered, and teaches nothing.
	prober := [6]byte{0x02, 0, 0, 0, 0, 0x33}
	w.send(arpFrame(t, prober, broadcastMAC, arpRequest, prober, netip.IPv4Unspecified(), [6]byte{}, host4))
	wantARP(t, w.next(), prober, arpReply, hostMAC, host4, prober, netip.IPv4Unspecified())
	if s, _ := h.neighborState(netip.IPv4Unspecified()); s != nudNone {
		t.Error("learned 0.0.0.0")
	}
}

func TestARPGratuitousOnStart(t *testing.T) {
	_, w := newTestHost(t, true)
	wantARP(t, w.next(), broadcastMAC, arpRequest, hostMAC, host4, [6]byte{}, host4)
}

func TestARPIgnoredAndMalformed(t *testing.T) {
	h, w := newTestHost(t, false)
	other := netip.MustParseAddr("192.0.2.3")
	// A request for another address: no answer, counted, and (merge rule)
	// no entry created for the sender.
	w.send(arpFrame(t, peerMAC, broadcastMAC, arpRequest, peerMAC, peer4, [6]byte{}, other))
	// ARP from our own MAC: ignored.
	w.send(arpFrame(t, hostMAC, broadcastMAC, arpRequest, hostMAC, other, [6]byte{}, host4))
	// Malformed: truncated, wrong hardware type, unknown operation.
	good := arpFrame(t, peerMAC, broadcastMAC, arpRequest, peerMAC, peer4, [6]byte{}, host4)
	w.send(good[:14+20])
	bad := bytes.Clone(good)
	bad[14+1] = 6 // IEEE 802 hardware type
	w.send(bad)
	bad = bytes.Clone(good)
	bad[14+7] = 9
	w.send(bad)
	w.barrier()
	c := h.Counters()
	if c.ARPIgnored != 2 || c.Malformed != 3 || c.ARPRepliesTx != 0 || c.ARPRequestsRx != 0 {
		t.Errorf("counters %+v", c)
	}
	if s, _ := h.neighborState(peer4); s != nudNone {
		t.Errorf("entry created from a request for someone else: %v", s)
	}
	if s, _ := h.neighborState(other); s != nudNone {
		t.Errorf("entry created from our own MAC: %v", s)
	}
}

func TestARPMergeRule(t *testing.T) {
	h, w := newTestHost(t, false)
	newMAC := [6]byte{0x02, 0, 0, 0, 0, 0x22}
	// Create the entry (request to us), then a gratuitous ARP for another
	// address updates it: the merge rule updates from any ARP.
	w.send(arpFrame(t, peerMAC, broadcastMAC, arpRequest, peerMAC, peer4, [6]byte{}, host4))
	w.next()
	w.send(arpFrame(t, newMAC, broadcastMAC, arpRequest, newMAC, peer4, [6]byte{}, peer4))
	w.barrier()
	if s, mac := h.neighborState(peer4); s != nudStale || mac != newMAC {
		t.Errorf("after gratuitous ARP: %v %x, want STALE %x", s, mac, newMAC)
	}
	// A unicast reply confirms: REACHABLE.
	w.send(arpFrame(t, newMAC, hostMAC, arpReply, newMAC, peer4, hostMAC, host4))
	w.barrier()
	if s, _ := h.neighborState(peer4); s != nudReachable {
		t.Errorf("after unicast reply: %v, want REACHABLE", s)
	}
	if c := h.Counters(); c.ARPRepliesRx != 1 {
		t.Errorf("arp_replies_rx %d", c.ARPRepliesRx)
	}
}
