package tapnic

import (
	"encoding/binary"
	"net/netip"
	"testing"
)

// frame builds an Ethernet frame: dst MAC, EtherType, then payload.
func frame(dst [6]byte, et uint16, payload []byte) []byte {
	f := make([]byte, 14, 14+len(payload))
	copy(f, dst[:])
	copy(f[6:], []byte{2, 0, 0, 0, 0, 9})
	binary.BigEndian.PutUint16(f[12:], et)
	return append(f, payload...)
}

func ipv4(dst netip.Addr, proto uint8, fragOff uint16, l4 []byte) []byte {
	ip := make([]byte, 20, 20+len(l4))
	ip[0], ip[9] = 0x45, proto
	binary.BigEndian.PutUint16(ip[2:], uint16(20+len(l4)))
	binary.BigEndian.PutUint16(ip[6:], fragOff)
	copy(ip[12:], []byte{10, 1, 0, 9})
	d := dst.As4()
	copy(ip[16:], d[:])
	return append(ip, l4...)
}

func ipv6(dst netip.Addr, next uint8, l4 []byte) []byte {
	ip := make([]byte, 40, 40+len(l4))
	ip[0], ip[6] = 0x60, next
	binary.BigEndian.PutUint16(ip[4:], uint16(len(l4)))
	d := dst.As16()
	copy(ip[24:], d[:])
	return append(ip, l4...)
}

func ports(src, dst uint16) []byte {
	b := make([]byte, 20)
	binary.BigEndian.PutUint16(b, src)
	binary.BigEndian.PutUint16(b[2:], dst)
	return b
}

func arp(op uint16, target netip.Addr) []byte {
	b := make([]byte, 28)
	binary.BigEndian.PutUint16(b[6:], op)
	t := target.As4()
	copy(b[24:], t[:])
	return b
}

func icmp6(typ uint8, target netip.Addr) []byte {
	b := make([]byte, 24)
	b[0] = typ
	t := target.As16()
	copy(b[8:], t[:])
	return b
}

// TestClassify: each kind of frame from the wire goes where the NIC and
// the kernel behind its host port would each expect it.
func TestClassify(t *testing.T) {
	mac := [6]byte{2, 0, 10, 1, 0, 2}
	other := [6]byte{2, 0, 10, 1, 0, 7}
	bcast := [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	own4, own6 := netip.MustParseAddr("10.1.0.2"), netip.MustParseAddr("fd00:1::2")
	other4, other6 := netip.MustParseAddr("10.1.0.9"), netip.MustParseAddr("fd00:1::9")
	solicited := netip.MustParseAddr("ff02::1:ff00:2")
	group4, group6 := netip.MustParseAddr("239.77.0.7"), netip.MustParseAddr("ff0e::7")
	c := &classifier{mac: mac, addrs4: []netip.Addr{own4}, addrs6: []netip.Addr{own6}, rocePort: 4791,
		tcpOwns: func(ip []byte) bool { return binary.BigEndian.Uint16(ip[len(ip)-20+2:]) == 18515 }}
	for _, tc := range []struct {
		name string
		f    []byte
		want verdict
	}{
		{"RoCEv2", frame(mac, etherIPv4, ipv4(own4, protoUDP, 0, ports(49152, 4791))), toNIC},
		{"RoCEv2 over IPv6", frame(mac, etherIPv6, ipv6(own6, protoUDP, ports(49152, 4791))), toNIC},
		{"other UDP", frame(mac, etherIPv4, ipv4(own4, protoUDP, 0, ports(5353, 53))), toPort},
		{"TCP of a netstack endpoint", frame(mac, etherIPv4, ipv4(own4, protoTCP, 0, ports(40000, 18515))), toNIC},
		{"TCP of nobody's in netstack", frame(mac, etherIPv4, ipv4(own4, protoTCP, 0, ports(40000, 22))), toPort},
		{"TCP over IPv6 of netstack", frame(mac, etherIPv6, ipv6(own6, protoTCP, ports(40000, 18515))), toNIC},
		{"TCP over IPv6 of the kernel", frame(mac, etherIPv6, ipv6(own6, protoTCP, ports(40000, 22))), toPort},
		{"echo request", frame(mac, etherIPv4, ipv4(own4, protoICMP, 0, []byte{8, 0, 0, 0})), toNIC},
		{"echo reply", frame(mac, etherIPv4, ipv4(own4, protoICMP, 0, []byte{0, 0, 0, 0})), toPort},
		{"fragment", frame(mac, etherIPv4, ipv4(own4, protoUDP, 0x2000, ports(1, 4791))), toPort},
		{"RoCEv2 to a group", frame([6]byte{0x01, 0, 0x5e, 0x4d, 0, 7}, etherIPv4, ipv4(group4, protoUDP, 0, ports(49152, 4791))), toNIC},
		{"RoCEv2 to an IPv6 group", frame([6]byte{0x33, 0x33, 0, 0, 0, 7}, etherIPv6, ipv6(group6, protoUDP, ports(49152, 4791))), toNIC},
		{"other UDP to a group", frame([6]byte{0x01, 0, 0x5e, 0, 0, 0xfb}, etherIPv4, ipv4(netip.MustParseAddr("224.0.0.251"), protoUDP, 0, ports(5353, 5353))), toPort},
		{"IGMP", frame([6]byte{0x01, 0, 0x5e, 0, 0, 0x16}, etherIPv4, ipv4(netip.MustParseAddr("224.0.0.22"), 2, 0, make([]byte, 8))), toPort},
		{"fragment to a group", frame([6]byte{0x01, 0, 0x5e, 0x4d, 0, 7}, etherIPv4, ipv4(group4, protoUDP, 0x2000, ports(1, 4791))), toPort},
		{"IPv4 broadcast", frame(bcast, etherIPv4, ipv4(netip.MustParseAddr("10.1.0.255"), protoUDP, 0, ports(67, 68))), toPort},
		{"IPv4 to another address", frame(mac, etherIPv4, ipv4(other4, protoTCP, 0, ports(1, 2))), toPort},
		{"flooded unicast for another host", frame(other, etherIPv4, ipv4(other4, protoUDP, 0, ports(1, 4791))), toNIC},
		{"ARP request for the NIC", frame(bcast, etherARP, arp(arpOpRequest, own4)), toNIC},
		{"ARP request for another", frame(bcast, etherARP, arp(arpOpRequest, other4)), toBoth},
		{"ARP reply", frame(mac, etherARP, arp(arpOpReply, own4)), toBoth},
		{"NS for the NIC", frame(mac, etherIPv6, ipv6(solicited, protoICMPv6, icmp6(icmp6NS, own6))), toNIC},
		{"NS for another", frame(mac, etherIPv6, ipv6(solicited, protoICMPv6, icmp6(icmp6NS, other6))), toPort},
		{"NA", frame(mac, etherIPv6, ipv6(own6, protoICMPv6, icmp6(icmp6NA, other6))), toBoth},
		{"ICMPv6 echo request", frame(mac, etherIPv6, ipv6(own6, protoICMPv6, icmp6(icmp6Echo, own6))), toNIC},
		{"ICMPv6 echo reply", frame(mac, etherIPv6, ipv6(own6, protoICMPv6, icmp6(129, own6))), toPort},
		{"router advertisement", frame(mac, etherIPv6, ipv6(netip.MustParseAddr("ff02::1"), protoICMPv6, icmp6(134, own6))), toPort},
		{"LLDP", frame([6]byte{0x01, 0x80, 0xc2, 0, 0, 0x0e}, 0x88cc, make([]byte, 46)), toPort},
		{"runt", []byte{1, 2, 3}, toNIC},
		{"truncated IPv4", frame(mac, etherIPv4, []byte{0x45, 0}), toNIC},
	} {
		if got := c.classify(tc.f); got != tc.want {
			t.Errorf("%s: verdict %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestClassifyAllocs: deciding allocates nothing (every frame's path).
func TestClassifyAllocs(t *testing.T) {
	own4 := netip.MustParseAddr("10.1.0.2")
	mac := [6]byte{2, 0, 10, 1, 0, 2}
	c := &classifier{mac: mac, addrs4: []netip.Addr{own4}, rocePort: 4791, tcpOwns: func([]byte) bool { return false }}
	f := frame(mac, etherIPv4, ipv4(own4, protoTCP, 0, ports(40000, 22)))
	if n := testing.AllocsPerRun(100, func() { c.classify(f) }); n != 0 {
		t.Errorf("classify allocates %.1f times per frame", n)
	}
}
