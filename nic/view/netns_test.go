package view

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// netnsChildEnv marks TestInterfaces' child, in a network namespace of
// its own.
const netnsChildEnv = "VIEW_TEST_NETNS_CHILD"

// TestInterfaces: in a fresh network namespace, lo goes up and each NIC
// gets a TAP named after it, up, carrying its addresses (not its
// link-local GID) with the plan's prefixes; a NIC the daemon bridges
// (AttachHostPort) takes the MAC it returns, one it does not stays
// local, and a bridging that fails leaves no TAP behind.
func TestInterfaces(t *testing.T) {
	if os.Getenv(netnsChildEnv) != "" {
		interfacesChild()
		return
	}
	c := exec.Command(os.Args[0], "-test.run=^TestInterfaces$")
	c.Env = append(os.Environ(), netnsChildEnv+"=1")
	c.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
	if uid, gid := os.Getuid(), os.Getgid(); uid != 0 {
		c.SysProcAttr.Cloneflags |= syscall.CLONE_NEWUSER
		c.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		c.SysProcAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		c.SysProcAttr.AmbientCaps = []uintptr{unix.CAP_NET_ADMIN}
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skipf("no /dev/net/tun: %v", err)
	}
	out, err := c.CombinedOutput()
	if err != nil && strings.Contains(err.Error(), "operation not permitted") {
		t.Skipf("no network namespace here: %v", err)
	}
	if err != nil || !strings.Contains(string(out), "interfaces ok") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

// closeRecorder counts Close calls.
type closeRecorder struct{ n *int }

func (c closeRecorder) Close() error { *c.n++; return nil }

func interfacesChild() {
	fail := func(f string, a ...any) {
		fmt.Printf(f+"\n", a...)
		os.Exit(1)
	}
	mac := net.HardwareAddr{0x02, 0, 0, 0, 0, 0x42}
	closed := 0
	AttachHostPort = func(socket, device string, tap *os.File) (net.HardwareAddr, io.Closer, error) {
		switch {
		case tap == nil || socket != "/s":
			return nil, nil, errors.New("no TAP or wrong socket")
		case device == "rnic0":
			return mac, closeRecorder{&closed}, nil
		case device == "bad":
			return nil, nil, errors.New("refused")
		}
		return nil, nil, ErrNotSupported
	}
	a := netip.MustParseAddr
	p := &Plan{Socket: "/s", Bits: map[netip.Addr]int{a("10.1.2.3"): 24}}
	devs := []Device{
		{Index: 0, Name: "rnic0", LinkMTU: 1500, GIDs: []netip.Addr{a("fe80::1"), a("::ffff:127.0.0.2")}},
		{Index: 1, Name: "rnic1", LinkMTU: 9000, GIDs: []netip.Addr{a("::ffff:10.1.2.3"), a("2001:db8::3")}},
	}
	names, closers, err := makeInterfaces(p, devs)
	if err != nil {
		fail("makeInterfaces: %v", err)
	}
	if names["rnic0"] != "rnic0" || names["rnic1"] != "rnic1" {
		fail("names %v", names)
	}
	want := map[string][]string{"rnic0": {"127.0.0.2/8"}, "rnic1": {"10.1.2.3/24", "2001:db8::3/128"}}
	for name, addrs := range want {
		l, err := netlink.LinkByName(name)
		if err != nil {
			fail("%s: %v", name, err)
		}
		if l.Attrs().Flags&net.FlagUp == 0 {
			fail("%s is down", name)
		}
		got, _ := netlink.AddrList(l, netlink.FAMILY_ALL)
		var have []string
		for _, g := range got {
			if !g.IP.IsLinkLocalUnicast() {
				have = append(have, g.IPNet.String())
			}
		}
		slices.Sort(have)
		if !slices.Equal(have, addrs) {
			fail("%s carries %v, want %v", name, have, addrs)
		}
	}
	if l, _ := netlink.LinkByName("rnic0"); l.Attrs().HardwareAddr.String() != mac.String() {
		fail("rnic0's MAC %s, want the bridged port's %s", l.Attrs().HardwareAddr, mac)
	}
	if l, _ := netlink.LinkByName("rnic1"); l.Attrs().MTU != 9000 {
		fail("rnic1's MTU %d, want 9000", l.Attrs().MTU)
	}
	if l, _ := netlink.LinkByName("lo"); l.Attrs().Flags&net.FlagUp == 0 {
		fail("lo is down")
	}
	for _, c := range closers {
		c.Close()
	}
	if closed != 1 {
		fail("the bridge was closed %d times, want once", closed)
	}
	if _, err := netlink.LinkByName("rnic0"); err == nil {
		fail("rnic0 outlives its file")
	}
	if _, _, err := makeInterfaces(p, []Device{{Name: "bad"}}); err == nil {
		fail("a failed bridging made an interface")
	}
	if _, err := netlink.LinkByName("bad"); err == nil {
		fail("a failed bridging left its TAP")
	}
	fmt.Println("interfaces ok")
}
