package view

import (
	"net/netip"
	"testing"
)

// TestPlan: a NIC on a loopback address needs the view's own network
// namespace; NICs whose addresses an up interface of the host other than
// lo carries do not, and point at that interface.
func TestPlan(t *testing.T) {
	a := func(s string) netip.Addr { return netip.MustParseAddr(s) }
	host := map[netip.Addr]hostAddr{
		a("192.0.2.2"): {ifname: "eth0", bits: 24, usable: true},
		a("fd00::2"):   {ifname: "eth0", bits: 64, usable: true},
		a("10.9.9.9"):  {ifname: "down0", bits: 16, usable: false},
		a("127.0.0.1"): {ifname: "lo", bits: 8},
	}
	dev := func(gids ...string) Device {
		d := Device{Name: "rnic0"}
		for _, g := range gids {
			d.GIDs = append(d.GIDs, a(g))
		}
		return d
	}
	p := plan("/s", []Device{dev("::ffff:192.0.2.2", "fd00::2", "fe80::1")}, host)
	if p.Netns || p.HostIf["rnic0"] != "eth0" || p.Bits[a("192.0.2.2")] != 24 || p.Bits[a("fd00::2")] != 64 {
		t.Errorf("host address: %+v, want no netns, eth0, /24 and /64", p)
	}
	p = plan("/s", []Device{dev("::ffff:127.0.0.2")}, host)
	if !p.Netns || p.HostIf != nil || p.Bits[a("127.0.0.2")] != 8 {
		t.Errorf("loopback address: %+v, want a netns and /8", p)
	}
	p = plan("/s", []Device{dev("::ffff:10.9.9.9")}, host)
	if !p.Netns || p.Bits[a("10.9.9.9")] != 16 {
		t.Errorf("address on a down interface: %+v, want a netns and the host's /16", p)
	}
	p = plan("/s", []Device{dev("::ffff:198.51.100.7", "2001:db8::7")}, host)
	if !p.Netns || p.Bits[a("198.51.100.7")] != 32 || p.Bits[a("2001:db8::7")] != 128 {
		t.Errorf("unknown addresses: %+v, want a netns, /32 and /128", p)
	}
}
