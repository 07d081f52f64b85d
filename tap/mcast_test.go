package tap

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

var (
	group4 = netip.MustParseAddr("230.1.2.3")
	group6 = netip.MustParseAddr("ff0e::1:2")
)

// igmpRecords decodes an IGMPv3 report off the wire, checking what RFC
// 3376 asks of its headers: to 224.0.0.22 and its MAC, TTL 1, a Router
// Alert, both checksums right. It returns the records' types and groups.
func igmpRecords(t *testing.T, f []byte) map[netip.Addr]layers.IGMPv3GroupRecordType {
	t.Helper()
	p := gopacket.NewPacket(f, layers.LayerTypeEthernet, gopacket.Default)
	e, _ := p.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
	ip, _ := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	ig, _ := p.Layer(layers.LayerTypeIGMP).(*layers.IGMP)
	if e == nil || ip == nil || ig == nil {
		t.Fatalf("not an IGMP frame: %v", p)
	}
	if !bytes.Equal(e.DstMAC, []byte{0x01, 0x00, 0x5e, 0, 0, 0x16}) || ip.DstIP.String() != "224.0.0.22" || ip.TTL != 1 ||
		len(ip.Options) == 0 || ip.Options[0].OptionType != 148 {
		t.Fatalf("IGMPv3 report headers: dst %v %v TTL %d options %v", e.DstMAC, ip.DstIP, ip.TTL, ip.Options)
	}
	raw := f[ethHeaderLen:]
	ihl := int(raw[0]&0xF) * 4
	if checksumFold(onesSum(0, raw[:ihl])) != 0xFFFF || checksumFold(onesSum(0, raw[ihl:])) != 0xFFFF {
		t.Fatal("IGMPv3 report: a bad checksum")
	}
	if ig.Type != layers.IGMPMembershipReportV3 {
		t.Fatalf("IGMP type %v, want a v3 report", ig.Type)
	}
	out := map[netip.Addr]layers.IGMPv3GroupRecordType{}
	for _, r := range ig.GroupRecords {
		a, _ := netip.AddrFromSlice(r.MulticastAddress.To4())
		out[a] = r.Type
		if r.NumberOfSources != 0 {
			t.Fatalf("record with %d sources", r.NumberOfSources)
		}
	}
	return out
}

// A joined IPv4 group is reported, its RoCE datagrams reach the engine,
// other ports of it get no port unreachable, a general query is answered
// with the group, a leave is reported and ends the delivery.
func TestMcastIGMP(t *testing.T) {
	h, w := newTestHost(t, false)
	got := make(chan []byte, 4)
	h.RoCE().SetReceiver(func(f []byte) { got <- bytes.Clone(f) })

	if err := h.JoinGroup(netip.AddrFrom16(group4.As16())); err != nil {
		t.Fatal(err)
	}
	if r := igmpRecords(t, w.next()); len(r) != 1 || r[group4] != layers.IGMPv3GroupRecordType(mcastToExclude) {
		t.Fatalf("join: records %v, want CHANGE_TO_EXCLUDE %v", r, group4)
	}
	f := roceFrame(t, peerMAC, groupMAC(group4), peer4, group4, 0, []byte("to the group"))
	w.send(f)
	select {
	case r := <-got:
		if !bytes.Equal(r, f) {
			t.Fatal("the group's frame changed on its way")
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("the group's RoCE frame did not arrive (counters %+v)", h.Counters())
	}
	w.send(udpFrame4(t, groupMAC(group4), group4, 9999, []byte("other port")))
	w.barrier() // and no port unreachable before the echo

	query := serialize(t, eth(peerMAC, groupMAC(allSystems), layers.EthernetTypeIPv4),
		&layers.IPv4{Version: 4, TTL: 1, Protocol: layers.IPProtocolIGMP, SrcIP: peer4.AsSlice(), DstIP: allSystems.AsSlice()},
		gopacket.Payload(igmpV2Query(netip.IPv4Unspecified())))
	w.send(query)
	if r := igmpRecords(t, w.next()); len(r) != 1 || r[group4] != layers.IGMPv3GroupRecordType(mcastModeIsExclude) {
		t.Fatalf("query: records %v, want MODE_IS_EXCLUDE %v", r, group4)
	}

	if err := h.LeaveGroup(group4); err != nil {
		t.Fatal(err)
	}
	if r := igmpRecords(t, w.next()); len(r) != 1 || r[group4] != layers.IGMPv3GroupRecordType(mcastToInclude) {
		t.Fatalf("leave: records %v, want CHANGE_TO_INCLUDE %v", r, group4)
	}
	before := h.Counters().NotForUs
	w.send(f)
	w.barrier()
	if len(got) != 0 || h.Counters().NotForUs != before+1 {
		t.Fatal("a group's frame was taken after the leave")
	}
	if c := h.Counters(); c.IGMPReportTx != 3 || c.McastQueriesRx != 1 {
		t.Fatalf("counters %+v", c)
	}
}

// igmpV2Query is an IGMPv2 membership query for group (:: for general).
func igmpV2Query(group netip.Addr) []byte {
	q := []byte{igmpQuery, 100, 0, 0, 0, 0, 0, 0}
	copy(q[4:], group.AsSlice())
	binary.BigEndian.PutUint16(q[2:], ^checksumFold(onesSum(0, q)))
	return q
}

// mldQuery is an MLDv2 general query from fe80::99 behind a hop-by-hop
// Router Alert, as a querier sends it.
func mldQuery() []byte {
	src := netip.MustParseAddr("fe80::99")
	f := make([]byte, ethHeaderLen+ipv6HeaderLen+8+28)
	putEth(f, multicastMAC(allNodes), peerMAC, etherTypeIPv6)
	ip := f[ethHeaderLen:]
	putIPv6(ip, ipProtoHopOpts, 1, src, allNodes, 8+28)
	copy(ip[ipv6HeaderLen:], []byte{ipProtoICMPv6, 0, 5, 2, 0, 0, 1, 0})
	msg := ip[ipv6HeaderLen+8:]
	msg[0] = icmpv6MLDQuery
	binary.BigEndian.PutUint16(msg[4:], 1000) // maximum response code
	sum := onesSum(0, ip[8:40]) + uint32(len(msg)) + ipProtoICMPv6 + onesSum(0, msg)
	binary.BigEndian.PutUint16(msg[2:], ^checksumFold(sum))
	return f
}

// mldRecords decodes an MLDv2 report off the wire.
func mldRecords(t *testing.T, f []byte) map[netip.Addr]layers.MLDv2MulticastAddressRecordType {
	t.Helper()
	p := gopacket.NewPacket(f, layers.LayerTypeEthernet, gopacket.Default)
	ip, _ := p.Layer(layers.LayerTypeIPv6).(*layers.IPv6)
	rep, _ := p.Layer(layers.LayerTypeMLDv2MulticastListenerReport).(*layers.MLDv2MulticastListenerReportMessage)
	if ip == nil || rep == nil || ip.HopLimit != 1 || ip.DstIP.String() != "ff02::16" {
		t.Fatalf("not an MLDv2 report to ff02::16 with hop limit 1: %v", p)
	}
	out := map[netip.Addr]layers.MLDv2MulticastAddressRecordType{}
	for _, r := range rep.MulticastAddressRecords {
		a, _ := netip.AddrFromSlice(r.MulticastAddress)
		out[a] = r.RecordType
	}
	return out
}

// The same for an IPv6 group, with MLDv2.
func TestMcastMLD(t *testing.T) {
	h, w := newTestHost(t, false)
	got := make(chan []byte, 4)
	h.RoCE().SetReceiver(func(f []byte) { got <- bytes.Clone(f) })
	if err := h.JoinGroup(group6); err != nil {
		t.Fatal(err)
	}
	if r := mldRecords(t, w.next()); len(r) != 1 || r[group6] != layers.MLDv2MulticastAddressRecordType(mcastToExclude) {
		t.Fatalf("join: records %v", r)
	}
	f := roceFrame(t, peerMAC, multicastMAC(group6), peer6, group6, 0, []byte("six"))
	w.send(f)
	select {
	case <-got:
	case <-time.After(5 * time.Second):
		t.Fatalf("the group's RoCE frame did not arrive (counters %+v)", h.Counters())
	}
	w.send(mldQuery())
	if r := mldRecords(t, w.next()); len(r) != 1 || r[group6] != layers.MLDv2MulticastAddressRecordType(mcastModeIsExclude) {
		t.Fatalf("query: records %v", r)
	}
	if err := h.LeaveGroup(group6); err != nil {
		t.Fatal(err)
	}
	if r := mldRecords(t, w.next()); len(r) != 1 || r[group6] != layers.MLDv2MulticastAddressRecordType(mcastToInclude) {
		t.Fatalf("leave: records %v", r)
	}
}

// The query decoders never panic, and what they accept is a query.
func FuzzMcastQuery(f *testing.F) {
	f.Add(igmpV2Query(group4))
	q := mldQuery()
	f.Add(q[ethHeaderLen+ipv6HeaderLen:])
	f.Fuzz(func(t *testing.T, b []byte) {
		if g, ok := parseIGMPQuery(b); ok && (b[0] != igmpQuery || !g.Is4()) {
			t.Fatalf("accepted %x as an IGMP query", b)
		}
		ip := make([]byte, ipv6HeaderLen)
		if g, ok := parseMLDQuery(b, ip); ok && !g.Is6() {
			t.Fatalf("accepted %x as an MLD query", b)
		}
	})
}
