// Test helpers for the TAP device tests: a network namespace of the test's
// own, so no test touches an interface it did not create.

package tap

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// requireTAP skips t unless it can create namespaces and TAPs.
func requireTAP(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (CAP_NET_ADMIN) to create a network namespace and TAP devices")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skipf("needs /dev/net/tun to create TAP devices: %v", err)
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs the ip command (iproute2) to create a network namespace")
	}
}

// testNetns is a network namespace created for one test.
type testNetns struct {
	t    *testing.T
	name string
}

// newTestNetns creates rnic-dev-<random> with lo up, deleted when the test
// ends (which also removes every link left in it).
func newTestNetns(t *testing.T) *testNetns {
	t.Helper()
	return newNamedNetns(t, "rnic-dev-")
}

// newNamedNetns is newTestNetns with another name prefix.
func newNamedNetns(t *testing.T, prefix string) *testNetns {
	t.Helper()
	requireTAP(t)
	var b [4]byte
	rand.Read(b[:])
	ns := &testNetns{t: t, name: prefix + hex.EncodeToString(b[:])}
	if out, err := exec.Command("ip", "netns", "add", ns.name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", ns.name, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", ns.name).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", ns.name, err, out)
		}
	})
	ns.ip("link", "set", "lo", "up")
	return ns
}

// ip runs `ip -n NS args...` and fails the test on error.
func (ns *testNetns) ip(args ...string) string {
	ns.t.Helper()
	out, err := ns.tryIP(args...)
	if err != nil {
		ns.t.Fatalf("ip -n %s %s: %v: %s", ns.name, strings.Join(args, " "), err, out)
	}
	return out
}

// tryIP runs `ip -n NS args...` and returns its output and error.
func (ns *testNetns) tryIP(args ...string) (string, error) {
	out, err := exec.Command("ip", append([]string{"-n", ns.name}, args...)...).CombinedOutput()
	return string(out), err
}

// linkExists reports whether the namespace has a link called name.
func (ns *testNetns) linkExists(name string) bool {
	ns.t.Helper()
	out, err := ns.tryIP("-o", "link", "show", "dev", name)
	if err != nil {
		if strings.Contains(out, "does not exist") {
			return false
		}
		ns.t.Fatalf("ip -n %s link show dev %s: %v: %s", ns.name, name, err, out)
	}
	return true
}

// addBridge adds an up bridge that forwards at once (STP off, forward delay
// 0), like the lab's.
func (ns *testNetns) addBridge(name string) {
	ns.t.Helper()
	ns.ip("link", "add", name, "type", "bridge", "stp_state", "0", "forward_delay", "0")
	ns.ip("link", "set", name, "up")
}

// sysctl writes a sysctl inside the namespace (/proc/sys/net is per
// namespace, so a process inside it must write it).
func (ns *testNetns) sysctl(key, value string) {
	ns.t.Helper()
	path := "/proc/sys/" + strings.ReplaceAll(key, ".", "/")
	cmd := exec.Command("ip", "netns", "exec", ns.name, "sh", "-c", `echo "$1" > "$2"`, "sh", value, path)
	if out, err := cmd.CombinedOutput(); err != nil {
		ns.t.Fatalf("sysctl %s=%s in %s: %v: %s", key, value, ns.name, err, out)
	}
}
