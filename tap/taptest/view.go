package taptest

import (
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// View is a network namespace of a test's standing in for a program's view
// (rnic exec's): a namespace with lo up and one TAP whose fd the test holds,
// as the view's holder would, to hand to an rnicd as a host port.
type View struct {
	// Name is the namespace (ip netns) name.
	Name string
	// TAP is the TAP's name inside it.
	TAP string
	// File is the TAP's fd (IFF_TAP|IFF_NO_PI, IFF_VNET_HDR if asked for).
	File *os.File
}

// NewView creates a namespace with lo up and a TAP named tap in it, opened
// with a virtio_net_hdr if vnet; both go when the test ends. The TAP is
// down and has no address: Configure gives it the NIC's.
func NewView(t testing.TB, tap string, vnet bool) *View {
	t.Helper()
	Require(t)
	var b [4]byte
	rand.Read(b[:])
	v := &View{Name: "rnicv-" + hex.EncodeToString(b[:]), TAP: tap}
	if out, err := exec.Command("ip", "netns", "add", v.Name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", v.Name, err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", v.Name).Run() })
	v.IP(t, "link", "set", "lo", "up")
	f, err := openTAPIn(v.Name, tap, vnet)
	if err != nil {
		t.Fatalf("TAP %s in %s: %v", tap, v.Name, err)
	}
	v.File = f
	t.Cleanup(func() { f.Close() })
	return v
}

// Configure gives the TAP's kernel side mac, the addresses (with their
// prefixes, "10.1.0.2/24") and mtu, and brings it up.
func (v *View) Configure(t testing.TB, mac net.HardwareAddr, mtu int, addrs ...string) {
	t.Helper()
	v.IP(t, "link", "set", v.TAP, "address", mac.String(), "mtu", strconv.Itoa(mtu))
	for _, a := range addrs {
		v.IP(t, "addr", "add", a, "dev", v.TAP, "nodad")
	}
	v.IP(t, "link", "set", v.TAP, "up")
}

// IP runs `ip -n VIEW args...` and fails the test on error.
func (v *View) IP(t testing.TB, args ...string) string {
	t.Helper()
	return (&Net{Name: v.Name}).IP(t, args...)
}

// Command returns a command that runs inside the view's namespace.
func (v *View) Command(name string, args ...string) *exec.Cmd {
	return (&Net{Name: v.Name}).Command(name, args...)
}

// openTAPIn creates the TAP name in namespace ns and returns its fd.
func openTAPIn(ns, name string, vnet bool) (*os.File, error) {
	var f *os.File
	var err error
	if nerr := InNetns(ns, func() { f, err = openTAP(name, vnet) }); nerr != nil {
		return nil, nerr
	}
	return f, err
}

// openTAP creates the TAP name in this thread's namespace.
func openTAP(name string, vnet bool) (*os.File, error) {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	ifr, err := unix.NewIfreq(name)
	if err == nil {
		flags := uint16(unix.IFF_TAP | unix.IFF_NO_PI)
		if vnet {
			flags |= unix.IFF_VNET_HDR
		}
		ifr.SetUint16(flags)
		err = unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr)
	}
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), "/dev/net/tun"), nil
}
