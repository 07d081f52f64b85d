package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rnic/rnic/cmd/internal/version"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
)

// TestDevices: rnic devices lists the in-process NIC and each NIC of an
// rnicd, with the node GUID each device reports.
func TestDevices(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{NICs: 2, MTU: 9000})
	out, errOut, code := rnic(t, "devices", "--socket", d.Socket, "--addr", "127.0.0.5")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q\n%s", code, errOut, out)
	}
	want := []string{
		// The MAC of 127.0.0.5 in the embedded mode, as an EUI-64.
		`(?m)^    rnic0 +00007ffffe000005  in-process$`,
	}
	for i, dev := range d.Devices {
		want = append(want, fmt.Sprintf(`(?m)^    %s +%016x  rnicd$`, regexp.QuoteMeta(d.Spec(i).String()), dev.Query().NodeGUID))
	}
	for _, w := range want {
		if !regexp.MustCompile(w).MatchString(out) {
			t.Errorf("no line %s in\n%s", w, out)
		}
	}
	// A daemon named but not there: an error, the in-process NIC still.
	out, errOut, code = rnic(t, "devices", "--socket", "/nonexistent/rnicd.sock")
	if code != 1 || !strings.Contains(out, "rnic0") || !strings.HasPrefix(errOut, "rnic devices: no rnicd at /nonexistent/rnicd.sock:") ||
		!strings.Contains(errOut, "start one with") {
		t.Errorf("absent daemon: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestDevicesFollowsSocketRule: with no --socket, rnic devices asks the
// daemon the socket rule names ($RNIC_SOCKET here), as exec and stat do;
// and devinfo -d NAME refuses a name no device has (neither rnicN, nor a
// daemon's NIC, nor a libibverbs device) rather than making an in-process
// NIC of it.
func TestDevicesFollowsSocketRule(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{NICs: 2})
	t.Setenv(ibv.SocketEnv, d.Socket)
	out, errOut, code := rnic(t, "devices")
	if code != 0 || !strings.Contains(out, d.Spec(1).String()) {
		t.Errorf("devices: exit %d, stderr %q\n%s", code, errOut, out)
	}
	out, errOut, code = rnic(t, "devinfo", "-d", "mlx5_0")
	if code == 0 || out != "" || !strings.Contains(errOut, "no device mlx5_0") {
		t.Errorf("devinfo -d mlx5_0: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	t.Setenv(ibv.SocketEnv, filepath.Join(t.TempDir(), "none.sock"))
	if _, errOut, code = rnic(t, "devices"); code != 1 || !strings.Contains(errOut, "no rnicd at") {
		t.Errorf("devices with $%s naming no daemon: exit %d, stderr %q", ibv.SocketEnv, code, errOut)
	}
}

// TestDevinfo: ibv_devinfo -v's fields for a daemon's NIC and the
// in-process one: identity, limits, port, and the GID table with types.
func TestDevinfo(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{NICs: 2, MTU: 9000})
	spec := d.Spec(1).String()
	gid := d.Devices[1].GIDs()[0]
	out, errOut, code := rnic(t, "devinfo", "-d", spec, "-v")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q\n%s", code, errOut, out)
	}
	for _, w := range []string{
		"hca_id:\t" + spec + "\n",
		"\tbackend:                rnicd\n",
		fmt.Sprintf("\tnode_guid:              %s\n", guidString(d.Devices[1].Query().NodeGUID)),
		"\tvendor_id:              0xffffff\n",
		"\tmax_cqe:                32767\n",
		"\tatomic_cap:             ATOMIC_GLOB (2)\n",
		"\t\tport:\t1\n",
		"\t\t\tstate:                  PORT_ACTIVE (4)\n",
		"\t\t\tactive_mtu:             4096 (5)\n",
		"\t\t\tlink_layer:             Ethernet\n",
		fmt.Sprintf("\t\t\tGID[  0]:               %s, RoCE v2 (%s)\n", gidString(gid), gid.Unmap()),
	} {
		if !strings.Contains(out, w) {
			t.Errorf("no %q in\n%s", w, out)
		}
	}
	out, _, code = rnic(t, "devinfo", "-d", "rnic0", "--addr", "10.1.2.3")
	if code != 0 || !strings.Contains(out, "GID[  0]:               0000:0000:0000:0000:0000:ffff:0a01:0203, RoCE v2 (10.1.2.3)\n") ||
		strings.Contains(out, "max_cqe") {
		t.Errorf("in-process NIC without -v: exit %d\n%s", code, out)
	}
	_, errOut, code = rnic(t, "devinfo", "-d", "nosuch@"+d.Socket)
	if code != 1 || !strings.HasPrefix(errOut, "rnic devinfo: ") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("no such device: exit %d, stderr %q", code, errOut)
	}
}

func TestVersion(t *testing.T) {
	for _, arg := range []string{"--version", "version"} {
		out, _, code := rnic(t, arg)
		if code != 0 || !regexp.MustCompile(`^rnic `+regexp.QuoteMeta(version.Release)+` \(module .*\) go1\.\S+ \w+/\w+\n$`).MatchString(out) {
			t.Errorf("rnic %s: exit %d, %q", arg, code, out)
		}
	}
}
