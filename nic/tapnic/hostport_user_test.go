package tapnic

import (
	"encoding/binary"
	"net/netip"
	"testing"
)

// TestUserHostPort: a user's host port gets no connection to a privileged
// port of the NIC's addresses (the NIC keeps it), and may send only as
// the NIC: from its addresses, ARP as one of them.
func TestUserHostPort(t *testing.T) {
	mac := [6]byte{2, 0, 10, 1, 0, 2}
	own4, own6 := netip.MustParseAddr("10.1.0.2"), netip.MustParseAddr("fd00:1::2")
	c := &classifier{mac: mac, addrs4: []netip.Addr{own4}, addrs6: []netip.Addr{own6}, rocePort: 4791,
		tcpOwns: func([]byte) bool { return false }, user: true, privStart: 1024}
	for _, tc := range []struct {
		name string
		f    []byte
		want verdict
	}{
		{"TCP to 22", frame(mac, etherIPv4, ipv4(own4, protoTCP, 0, ports(40000, 22))), toNIC},
		{"UDP to 53 over IPv6", frame(mac, etherIPv6, ipv6(own6, protoUDP, ports(40000, 53))), toNIC},
		{"TCP to 18515", frame(mac, etherIPv4, ipv4(own4, protoTCP, 0, ports(40000, 18515))), toPort},
		{"a reply from port 22", frame(mac, etherIPv4, ipv4(own4, protoTCP, 0, ports(22, 40000))), toPort},
	} {
		if got := c.classify(tc.f); got != tc.want {
			t.Errorf("%s: verdict %d, want %d", tc.name, got, tc.want)
		}
	}
	root := *c
	root.user = false
	if got := root.classify(frame(mac, etherIPv4, ipv4(own4, protoTCP, 0, ports(40000, 22)))); got != toPort {
		t.Errorf("root's port, TCP to 22: verdict %d, want the port's", got)
	}

	from4 := func(src string, proto uint8) []byte {
		f := frame([6]byte{2, 0, 10, 1, 0, 1}, etherIPv4, ipv4(own4, proto, 0, ports(40000, 80)))
		a := netip.MustParseAddr(src).As4()
		copy(f[ethLen+12:], a[:])
		return f
	}
	from6 := func(src string, next uint8) []byte {
		f := frame([6]byte{2, 0, 10, 1, 0, 1}, etherIPv6, ipv6(own6, next, ports(40000, 80)))
		a := netip.MustParseAddr(src).As16()
		copy(f[ethLen+8:], a[:])
		return f
	}
	arpFrom := func(sender string) []byte {
		p := arp(arpOpRequest, netip.MustParseAddr("10.1.0.9"))
		a := netip.MustParseAddr(sender).As4()
		copy(p[14:], a[:])
		binary.BigEndian.PutUint16(p[6:], arpOpRequest)
		return frame([6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, etherARP, p)
	}
	for _, tc := range []struct {
		name string
		f    []byte
		ok   bool
	}{
		{"IPv4 from the NIC's address", from4("10.1.0.2", protoTCP), true},
		{"IPv4 from another address", from4("10.1.0.66", protoTCP), false},
		{"IPv6 from the NIC's address", from6("fd00:1::2", protoUDP), true},
		{"IPv6 from another address", from6("fd00:1::66", protoUDP), false},
		{"ICMPv6 from :: (DAD)", from6("::", protoICMPv6), true},
		{"UDP from ::", from6("::", protoUDP), false},
		{"ARP as the NIC", arpFrom("10.1.0.2"), true},
		{"ARP as another", arpFrom("10.1.0.66"), false},
		{"another EtherType", frame([6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 0x88cc, make([]byte, 46)), false},
	} {
		if got := c.mayOriginate(tc.f); got != tc.ok {
			t.Errorf("%s: may send %v, want %v", tc.name, got, tc.ok)
		}
	}
}
