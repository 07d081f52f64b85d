package dropin

// rnic exec's view on a TAP-mode rnicd: each NIC's interface in the view
// is bridged onto the NIC's wire (rnicd's host port), so the program's own
// kernel network is its NIC's, as a program's on a host with rxe: it
// reaches the kernel on the bridge at the NIC's address.

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rnic/rnic/tap/taptest"
)

func TestViewTAPReachesWire(t *testing.T) {
	taptest.Require(t)
	needLibrary(t)
	n := taptest.New(t, 84)
	d := tapDaemon(t, n, "roce", 10)
	peer := n.BridgeV4.Addr().String()
	script := `ip -br addr show rnic0; ping -c 2 -W 5 ` + peer + ` >/dev/null && echo ping=ok; ibv_devices | grep -c rnic`
	c := exec.Command(build.rnic, "exec", "-S", d.socket, "--", "sh", "-c", script)
	c.Env = append(os.Environ(), "RNIC_VIEW_DIR="+filepath.Join(t.TempDir(), "v"))
	out, err := c.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ping=ok") || !strings.Contains(string(out), d.addrs[0]) {
		t.Fatalf("root's program in the view of a TAP rnicd: %v, want its rnic0 (%s) to reach %s on the wire\n%s\n%s",
			err, d.addrs[0], peer, out, d.p.report())
	}
	// What crossed the host port shows in rnic stat (the holder keeps
	// it attached while rnicd runs).
	st, err := exec.Command(build.rnic, "stat", "--socket", d.socket, "counters").CombinedOutput()
	m := regexp.MustCompile(`(?m)^counter link rnic0/1 .*\bhost_port_from_frames (\d+)`).FindSubmatch(st)
	if err != nil || m == nil || string(m[1]) == "0" {
		t.Errorf("rnic stat counters: %v; want rnic0's host_port_from_frames above 0\n%s", err, st)
	}
}

// TestViewTAPPingpong: the case (a): two NICs of one TAP-mode
// rnicd and Debian's ibv_rc_pingpong through rnic exec, the client aimed
// at the server NIC's own address, as on rxe. Without the view the
// program's TCP is the host kernel's, which does not own that address
// ("Couldn't connect to ADDR:18515"); in it, the view's interfaces carry
// the NICs' addresses.
func TestViewTAPPingpong(t *testing.T) {
	taptest.Require(t)
	needLibrary(t)
	needPrograms(t, "ibv_rc_pingpong")
	n := taptest.New(t, 85)
	d := tapDaemon(t, n, "roce", 10)
	port := freeTCPPort(t)
	common := []string{"ibv_rc_pingpong", "-g", "1", "-n", "100", "-s", "4096", "--chk", "-p", strconv.Itoa(port)}
	srv, cli := d.runPair(t, port, append(append([]string{}, common...), "-d", "rnic0"),
		append(append([]string{}, common...), "-d", "rnic1", d.addrs[0]))
	for _, p := range []*proc{srv, cli} {
		checkPingpongOutput(t, p, "4096", 100, false)
	}
}
