package agent

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/rnic/rnic/nic/ibv"
)

// gidDevice is a device with the given GID table and nothing else.
type gidDevice struct {
	ibv.Device
	gids []netip.Addr
}

func (d gidDevice) GIDs() []netip.Addr { return d.gids }

// igmpJoined says whether the kernel lists group as joined on lo
// (/proc/net/igmp: the group in host byte order, hex).
func igmpJoined(t *testing.T, group netip.Addr) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/net/igmp")
	if err != nil {
		t.Skipf("no /proc/net/igmp: %v", err)
	}
	a := group.As4()
	hex := fmt.Sprintf("%08X", binary.NativeEndian.Uint32(a[:]))
	return strings.Contains(string(b), hex)
}

// TestJoinIP: a device whose address an interface holds (lo's 127.0.0.1)
// gets the kernel's membership of the group for as long as the socket
// stays open; a device whose address no interface holds gets none.
func TestJoinIP(t *testing.T) {
	group := netip.MustParseAddr("239.77.251.7")
	c, err := joinIP(gidDevice{gids: []netip.Addr{{}, netip.MustParseAddr("::ffff:127.0.0.1")}}, netip.AddrFrom16(group.As16()))
	if err != nil || c == nil {
		t.Fatalf("joinIP on lo's address: %v, %v", c, err)
	}
	if !igmpJoined(t, group) {
		c.Close()
		t.Fatalf("%v not in /proc/net/igmp after joinIP", group)
	}
	c.Close()
	if igmpJoined(t, group) {
		t.Errorf("%v still in /proc/net/igmp after the socket closed", group)
	}
	c, err = joinIP(gidDevice{gids: []netip.Addr{netip.MustParseAddr("::ffff:192.0.2.77")}}, group)
	if c != nil || err != nil {
		t.Errorf("joinIP for an address no interface holds: %v, %v; want nothing", c, err)
	}
}
