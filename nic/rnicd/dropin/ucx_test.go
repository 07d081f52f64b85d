package dropin

// UCX (Debian 12's ucx-utils, UCX 1.13.1) on rnic through rnic exec:
// ucx_info lists rc_verbs and ud_verbs on each RoCEv2 NIC and nothing on
// an iWARP one (UCX skips iWARP devices); ucx_perftest runs between the
// two NICs, its server on rnic0, its client on rnic1, over its own TCP
// exchange.

import (
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// needUCXTools skips when ucx-utils is not installed.
func needUCXTools(t *testing.T) {
	t.Helper()
	needLibrary(t)
	for _, n := range []string{"ucx_info", "ucx_perftest"} {
		if _, err := exec.LookPath(n); err != nil {
			t.Skipf("%s is not installed: apt-get install ucx-utils", n)
		}
	}
}

// ucxTransports runs ucx_info -d through rnic exec on d and returns the
// transports it lists by memory domain: md → "tl/device".
func ucxTransports(t *testing.T, d *daemon) map[string][]string {
	t.Helper()
	p := d.runOne(t, "ucx_info", "-d")
	if !p.ok() {
		t.Fatalf("ucx_info -d failed\n%s", p.report())
	}
	out := map[string][]string{}
	md, tl := "", ""
	for _, l := range strings.Split(p.out.String(), "\n") {
		f := strings.Fields(strings.TrimPrefix(l, "#"))
		switch {
		case len(f) == 3 && f[0] == "Memory" && f[1] == "domain:":
			md = f[2]
		case len(f) == 2 && f[0] == "Transport:":
			tl = f[1]
		case len(f) == 2 && f[0] == "Device:" && md != "":
			out[md] = append(out[md], tl+"/"+f[1])
		}
	}
	return out
}

// needUCXDevices fails when UCX sees no memory domain of rnic0 through
// rnic exec (its view presents /dev/infiniband/uverbsN and
// /sys/class/infiniband, and the drop-in names the device uverbsN).
func needUCXDevices(t *testing.T, d *daemon) {
	t.Helper()
	if _, ok := ucxTransports(t, d)["rnic0"]; ok {
		return
	}
	t.Fatal("UCX sees no IB device through rnic exec: it needs /dev/infiniband/<dev_name> and /sys/class/infiniband/<dev> in the program's view")
}

// TestUCXInfo: ucx_info -d lists rc_verbs and ud_verbs on port 1 of both
// RoCEv2 NICs, and no memory domain of an iWARP NIC.
func TestUCXInfo(t *testing.T) {
	needUCXTools(t)
	d := sharedDaemon(t)
	needUCXDevices(t, d)
	got := ucxTransports(t, d)
	for _, nic := range []string{"rnic0", "rnic1"} {
		for _, tl := range []string{"rc_verbs", "ud_verbs"} {
			want := tl + "/" + nic + ":1"
			if !contains(got[nic], want) {
				t.Errorf("ucx_info -d: memory domain %s has %v, want %s", nic, got[nic], want)
			}
		}
	}
	iw := ucxTransports(t, sharedDaemonOf(t, nicTCP))
	for _, nic := range []string{"rnic0", "rnic1"} {
		if tls, ok := iw[nic]; ok {
			t.Errorf("ucx_info -d lists the iWARP NIC %s (%v): UCX has no iWARP support and must skip it", nic, tls)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// finalLine matches ucx_perftest's result line: "Final:" and its numbers.
var finalLine = regexp.MustCompile(`(?m)^Final:\s+(\d+)\s+.*$`)

// TestUCXPerftest: ucx_perftest between the NICs, server on rnic0 and
// client on rnic1: the UCT tests put_bw, get and am_lat on rc_verbs,
// am_lat on ud_verbs, and UCP's tag_lat on rc_verbs (UCX_TLS=rc_v: rc_verbs,
// with ud_verbs only for wire-up), whose client says it chose rc_verbs.
func TestUCXPerftest(t *testing.T) {
	needUCXTools(t)
	d := sharedDaemon(t)
	needUCXDevices(t, d)
	uct := func(tl string) ([]string, []string) {
		return []string{"-x", tl, "-d", "rnic0:1"}, []string{"-x", tl, "-d", "rnic1:1"}
	}
	ucp := func(dev string) []string {
		return []string{"UCX_TLS=rc_v", "UCX_NET_DEVICES=" + dev, "UCX_LOG_LEVEL=info"}
	}
	for _, c := range []struct {
		name, tl string
		args     []string // the test's, given to both sides
		want     string   // in the client's output, besides the result
	}{
		{"put_bw", "rc_verbs", []string{"-t", "put_bw", "-D", "zcopy", "-s", "65536", "-n", "200"}, ""},
		{"get", "rc_verbs", []string{"-t", "get", "-D", "zcopy", "-s", "65536", "-n", "200"}, ""},
		{"am_lat", "rc_verbs", []string{"-t", "am_lat", "-s", "8", "-n", "2000"}, ""},
		{"ud_am_lat", "ud_verbs", []string{"-t", "am_lat", "-s", "8", "-n", "2000"}, ""},
		{"tag_lat", "", []string{"-t", "tag_lat", "-s", "8", "-n", "2000"}, "tag(rc_verbs/rnic1:1)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			port := freeTCPPort(t)
			srv := []string{"ucx_perftest", "-p", fmt.Sprint(port)}
			cli := append([]string(nil), srv...)
			var srvEnv, cliEnv []string
			if c.tl != "" {
				s, k := uct(c.tl)
				srv, cli = append(srv, s...), append(cli, k...)
			} else {
				srvEnv, cliEnv = ucp("rnic0:1"), ucp("rnic1:1")
			}
			srv = append(srv, c.args...)
			cli = append(append(cli, c.args...), "127.0.0.1")
			_, p := d.runPairEnv(t, port, srvEnv, srv, cliEnv, cli)
			out := p.out.String()
			m := finalLine.FindString(out)
			if m == "" || !strings.Contains(out, c.want) {
				t.Fatalf("no result line (or no %q) in the client's output\n%s", c.want, p.report())
			}
			t.Logf("%s %s", c.name, m)
		})
	}
}
