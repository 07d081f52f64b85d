// Package taptest builds the private network a TAP-mode test runs in: a
// network namespace of its own with a bridge, onto which the test's NICs
// put their TAPs (the recipe of cmd/interop/lab/vm.sh: bridge with STP off,
// forward delay 0, multicast snooping off, an address on the bridge for the
// namespace's own kernel stack, so `ping` from the namespace reaches the
// NICs).
//
// Network safety: everything lives in a namespace the test creates and
// deletes; nothing is added to, or sent from, the namespace the test runs
// in.
package taptest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Net is one test's namespace and bridge.
type Net struct {
	// Name is the namespace (ip netns) name.
	Name string
	// Bridge is the bridge's name inside it.
	Bridge string
	// BridgeV4 and BridgeV6 are the namespace kernel's own addresses on the
	// bridge, in the prefixes the NICs use (Subnet4/Subnet6).
	BridgeV4, BridgeV6 netip.Prefix
}

// Require skips t unless TAP-mode tests can run here: they need root (to
// create namespaces and TAPs), /dev/net/tun and the ip command.
func Require(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("TAP mode needs root (CAP_NET_ADMIN) to create a namespace and TAP devices; CI runs as root")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skipf("TAP mode needs /dev/net/tun: %v", err)
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("TAP-mode tests need the ip command (iproute2)")
	}
}

// New creates a namespace with a bridge holding 10.N.0.1/24 and
// fd00:N::1/64 (N from the test's subnet number, 1..254), deleted when the
// test ends. It skips t when Require does.
func New(t testing.TB, subnet int) *Net {
	t.Helper()
	Require(t)
	var b [4]byte
	rand.Read(b[:])
	n := &Net{
		Name:     "rnic-" + hex.EncodeToString(b[:]),
		Bridge:   "br0",
		BridgeV4: netip.MustParsePrefix(fmt.Sprintf("10.%d.0.1/24", subnet)),
		BridgeV6: netip.MustParsePrefix(fmt.Sprintf("fd00:%x::1/64", subnet)),
	}
	if out, err := exec.Command("ip", "netns", "add", n.Name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", n.Name, err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", n.Name).Run() })
	for _, args := range [][]string{
		{"link", "set", "lo", "up"},
		{"link", "add", n.Bridge, "type", "bridge", "stp_state", "0", "forward_delay", "0", "mcast_snooping", "0"},
		{"addr", "add", n.BridgeV4.String(), "dev", n.Bridge},
		{"addr", "add", n.BridgeV6.String(), "dev", n.Bridge, "nodad"},
		{"link", "set", n.Bridge, "up"},
	} {
		n.IP(t, args...)
	}
	return n
}

// Addr4 and Addr6 return the i-th host address (with its prefix) of the
// test's subnets: 10.N.0.i/24 and fd00:N::i/64.
func (n *Net) Addr4(i int) netip.Prefix {
	a := n.BridgeV4.Addr().As4()
	a[3] = byte(i)
	return netip.PrefixFrom(netip.AddrFrom4(a), 24)
}

func (n *Net) Addr6(i int) netip.Prefix {
	a := n.BridgeV6.Addr().As16()
	a[15] = byte(i)
	return netip.PrefixFrom(netip.AddrFrom16(a), 64)
}

// IP runs `ip -n NS args...` and fails the test on error.
func (n *Net) IP(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command("ip", append([]string{"-n", n.Name}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("ip -n %s %s: %v: %s", n.Name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Command returns a command that runs inside the namespace.
func (n *Net) Command(name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", n.Name, name}, args...)...)
}

// Ping pings addr from the namespace's kernel until it answers or the
// deadline passes, and returns ping's output of the last attempt and
// whether it answered.
func (n *Net) Ping(addr netip.Addr, within time.Duration) (string, bool) {
	deadline := time.Now().Add(within)
	for {
		out, err := n.Command("ping", "-c", "1", "-W", "1", addr.String()).CombinedOutput()
		if err == nil {
			return string(out), true
		}
		if time.Now().After(deadline) {
			return string(out), false
		}
		time.Sleep(100 * time.Millisecond)
	}
}
