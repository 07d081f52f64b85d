package progkit

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/rnic/rnic/nic/ibv"
)

var (
	errTestConfig = errors.New("test: bad configuration")
	testKit       = Program{Name: "test", ErrConfig: errTestConfig}
)

// resolveTo makes the resolver answer addrs (as strings) for any name.
func resolveTo(t *testing.T, addrs ...string) {
	t.Helper()
	prev := lookupNetIP
	t.Cleanup(func() { lookupNetIP = prev })
	lookupNetIP = func(context.Context, string, string) ([]netip.Addr, error) {
		out := make([]netip.Addr, len(addrs))
		for i, a := range addrs {
			out[i] = netip.MustParseAddr(a)
		}
		return out, nil
	}
}

func addrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out
}

// TestLookupUnmaps: whatever the resolver answers, and whichever rule picks
// the address (a literal, a family the NIC has, IPv4 first, the only one),
// Lookup returns it unmapped: a mapped one compared with a NIC's own
// addresses, or asked its family, would be taken for IPv6.
func TestLookupUnmaps(t *testing.T) {
	for _, c := range []struct {
		name     string
		host     string
		resolved []string
		own      []netip.Addr
		want     string
	}{
		{"literal", "::ffff:10.0.0.3", nil, nil, "10.0.0.3"},
		{"the only answer, mapped", "h", []string{"::ffff:10.0.0.1"}, nil, "10.0.0.1"},
		{"IPv4 first", "h", []string{"2001:db8::1", "::ffff:10.0.0.2"}, nil, "10.0.0.2"},
		{"IPv6 only", "h", []string{"2001:db8::1"}, nil, "2001:db8::1"},
		{"the NIC's family", "h", []string{"10.0.0.1", "2001:db8::1"}, addrs("2001:db8::5"), "2001:db8::1"},
		{"the NIC's family, mapped", "h", []string{"2001:db8::1", "::ffff:10.0.0.1"}, addrs("10.0.0.9"), "10.0.0.1"},
		{"no family of the NIC's", "h", []string{"::ffff:10.0.0.7"}, addrs("2001:db8::5"), "10.0.0.7"},
	} {
		t.Run(c.name, func(t *testing.T) {
			resolveTo(t, c.resolved...)
			got, err := testKit.Lookup(context.Background(), c.host, c.own)
			if err != nil {
				t.Fatal(err)
			}
			if got.Is4In6() || got != netip.MustParseAddr(c.want) {
				t.Fatalf("Lookup(%s) = %v, want %s", c.host, got, c.want)
			}
		})
	}
}

// TestLookupError: a name that does not resolve is the program's error.
func TestLookupError(t *testing.T) {
	resolveTo(t)
	_, err := testKit.Lookup(context.Background(), "nowhere", nil)
	if err == nil || !strings.HasPrefix(err.Error(), "test: resolve nowhere: ") {
		t.Fatalf("Lookup of a name with no address: %v", err)
	}
}

// TestChooseAddr: a side's address among its NIC's.
func TestChooseAddr(t *testing.T) {
	own := addrs("10.0.0.1", "2001:db8::1")
	for _, c := range []struct {
		name         string
		addr, server string
		want         string // "" for a configuration error
	}{
		{"server, none asked", "", "", "10.0.0.1"},
		{"client of an IPv6 server", "", "2001:db8::2", "2001:db8::1"},
		{"client of a mapped IPv4 server", "", "::ffff:10.0.0.2", "10.0.0.1"},
		{"asked, mapped", "::ffff:10.0.0.1", "10.0.0.2", "10.0.0.1"},
		{"asked, not the NIC's", "10.0.0.5", "", ""},
		{"asked, of another family than the server", "2001:db8::1", "10.0.0.2", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var addr, server netip.Addr
			if c.addr != "" {
				addr = netip.MustParseAddr(c.addr)
			}
			if c.server != "" {
				server = netip.MustParseAddr(c.server)
			}
			got, err := testKit.ChooseAddr(own, addr, server, "TAP t0")
			if c.want == "" {
				if !errors.Is(err, errTestConfig) {
					t.Fatalf("ChooseAddr = %v, %v; want a configuration error", got, err)
				}
				return
			}
			if err != nil || got != netip.MustParseAddr(c.want) {
				t.Fatalf("ChooseAddr = %v, %v; want %s", got, err, c.want)
			}
		})
	}
	if _, err := testKit.ChooseAddr(addrs("10.0.0.1"), netip.Addr{}, netip.MustParseAddr("2001:db8::2"), "TAP t0"); !errors.Is(err, errTestConfig) {
		t.Errorf("no address of the server's family: %v", err)
	}
}

// gidDevice is a device with a GID table and nothing else.
type gidDevice struct {
	ibv.Device
	gids []netip.Addr
}

func (d gidDevice) GIDs() []netip.Addr { return d.gids }

// TestDeviceAddrs: a GID table's addresses, unmapped, without the
// link-local GID, the unspecified one, or repeats.
func TestDeviceAddrs(t *testing.T) {
	dev := gidDevice{gids: addrs("fe80::1", "::ffff:10.0.0.1", "2001:db8::1", "::", "::ffff:10.0.0.1")}
	got := DeviceAddrs(dev)
	want := addrs("10.0.0.1", "2001:db8::1")
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("DeviceAddrs = %v, want %v", got, want)
	}
}

// TestAddrOfFamily: a mapped peer is an IPv4 one, and the address returned
// is unmapped.
func TestAddrOfFamily(t *testing.T) {
	a, ok := AddrOfFamily(addrs("2001:db8::1", "::ffff:10.0.0.1"), netip.MustParseAddr("::ffff:10.0.0.2"))
	if !ok || a != netip.MustParseAddr("10.0.0.1") {
		t.Fatalf("AddrOfFamily = %v, %v", a, ok)
	}
	if _, ok := AddrOfFamily(addrs("2001:db8::1"), netip.MustParseAddr("10.0.0.2")); ok {
		t.Fatal("AddrOfFamily found an IPv4 address among IPv6 ones")
	}
}
