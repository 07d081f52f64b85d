package main

import (
	"errors"
	"io"
	"net/netip"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/rnic/rnic/nic/tapnic"
)

// parseTAP parses args with the TAP flags alone.
func parseTAP(t *testing.T, perNIC bool, args ...string) ([]tapnic.Config, *tapFlags, error) {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.IntP("mtu", "m", 1024, "path MTU")
	tf := addTAPFlags(fs, perNIC)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	c, err := tf.configs()
	return c, tf, err
}

func TestTAPFlagsConfigs(t *testing.T) {
	// No --tap: the embedded mode.
	if c, _, err := parseTAP(t, false); c != nil || err != nil {
		t.Errorf("no flags: %v %v", c, err)
	}
	// One NIC, dual stack: every --ip is its, in GID order.
	c, _, err := parseTAP(t, false, "--tap", "rnic-t0", "--ip", "10.0.0.1/24", "--ip", "fd00::1/64",
		"--mac", "02:00:00:00:00:01", "--tap-mtu", "9000", "--netns", "lab", "--bridge", "br0")
	want := tapnic.Config{TAP: "rnic-t0", MTU: 9000, Netns: "lab", Bridge: "br0", MAC: [6]byte{2, 0, 0, 0, 0, 1},
		Prefixes: []netip.Prefix{netip.MustParsePrefix("10.0.0.1/24"), netip.MustParsePrefix("fd00::1/64")}}
	if err != nil || len(c) != 1 || c[0].TAP != want.TAP || c[0].MTU != 9000 || c[0].Netns != "lab" || c[0].Bridge != "br0" ||
		c[0].MAC != want.MAC || len(c[0].Prefixes) != 2 || c[0].Prefixes[1] != want.Prefixes[1] {
		t.Errorf("one NIC: %+v %v", c, err)
	}
	// Two NICs: one --ip and one --mac each, in order; MACs optional.
	c, _, err = parseTAP(t, true, "--tap", "a", "--tap", "b", "--ip", "10.0.0.1/24", "--ip", "10.0.0.2/24")
	if err != nil || len(c) != 2 || c[0].TAP != "a" || c[1].TAP != "b" || c[0].MTU != 1500 ||
		c[0].Prefixes[0].String() != "10.0.0.1/24" || c[1].Prefixes[0].String() != "10.0.0.2/24" || c[1].MAC != ([6]byte{}) {
		t.Errorf("two NICs: %+v %v", c, err)
	}
	c, _, err = parseTAP(t, true, "--tap", "a", "--tap", "b", "--ip", "fd00::1/64", "--ip", "fd00::2/64",
		"--mac", "02:00:00:00:00:0a", "--mac", "02:00:00:00:00:0b", "--bridge", "br0")
	if err != nil || c[0].MAC[5] != 0xa || c[1].MAC[5] != 0xb || c[1].Bridge != "br0" {
		t.Errorf("two NICs with MACs: %+v %v", c, err)
	}
	// Offload is on unless --tap-offload=false, for every NIC.
	if c[0].NoOffload || c[1].NoOffload {
		t.Errorf("offload off by default: %+v", c)
	}
	c, _, err = parseTAP(t, true, "--tap", "a", "--tap", "b", "--ip", "10.0.0.1/24", "--ip", "10.0.0.2/24", "--tap-offload=false")
	if err != nil || !c[0].NoOffload || !c[1].NoOffload {
		t.Errorf("--tap-offload=false: %+v %v", c, err)
	}
}

func TestTAPFlagsErrors(t *testing.T) {
	for _, c := range []struct {
		perNIC bool
		args   []string
		want   string
	}{
		{false, []string{"--ip", "10.0.0.1/24"}, "--ip without --tap"},
		{false, []string{"--mac", "02:00:00:00:00:01"}, "--mac without --tap"},
		{false, []string{"--bridge", "br0"}, "--bridge without --tap"},
		{false, []string{"--netns", "x"}, "--netns without --tap"},
		{false, []string{"--tap-mtu", "9000"}, "--tap-mtu without --tap"},
		{false, []string{"--tap-offload=false"}, "--tap-offload without --tap"},
		{false, []string{"--tap", "t0"}, "--tap without --ip"},
		{false, []string{"--tap", "t0", "--ip", "10.0.0.1"}, "ADDRESS/BITS"},
		{false, []string{"--tap", "t0", "--ip", "nonsense/24"}, "ADDRESS/BITS"},
		{false, []string{"--tap", "t0", "--ip", "10.0.0.1/24", "--mac", "zz:00:00:00:00:01"}, "six bytes"},
		{false, []string{"--tap", "t0", "--ip", "10.0.0.1/24", "--mac", "02:00:00:00:00:00:00:01"}, "six bytes"},
		{false, []string{"--tap", "t0", "--ip", "10.0.0.1/24", "--mac", "01:00:5e:00:00:01"}, "unicast"},
		{false, []string{"--tap", "t0", "--ip", "10.0.0.1/24", "--mac", "02:00:00:00:00:01", "--mac", "02:00:00:00:00:02"}, "2 --mac"},
		{false, []string{"--tap", "t0", "--ip", "10.0.0.1/24", "--tap-mtu", "100"}, "576..9000"},
		{false, []string{"--tap", "t0", "--ip", "10.0.0.1/24", "--tap-mtu", "9001"}, "576..9000"},
		{false, []string{"--tap", "t0", "--ip", "fd00::1/64", "--tap-mtu", "1000"}, "1280"},
		{true, []string{"--tap", "a", "--tap", "b", "--ip", "10.0.0.1/24"}, "one --ip per NIC"},
		{true, []string{"--tap", "a", "--tap", "a", "--ip", "10.0.0.1/24", "--ip", "10.0.0.2/24"}, "given twice"},
	} {
		_, _, err := parseTAP(t, c.perNIC, c.args...)
		if !errors.Is(err, errTAPFlags) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.args, err, c.want)
		}
	}
}

func TestTAPPathMTU(t *testing.T) {
	for _, c := range []struct {
		args []string
		want int
		err  bool
	}{
		{[]string{"--tap", "t", "--ip", "10.0.0.1/24"}, 1024, false},
		{[]string{"--tap", "t", "--ip", "10.0.0.1/24", "--tap-mtu", "9000"}, 4096, false},
		{[]string{"--tap", "t", "--ip", "10.0.0.1/24", "-m", "512"}, 512, false},
		{[]string{"--tap", "t", "--ip", "10.0.0.1/24", "-m", "2048"}, 0, true},
		{[]string{"--tap", "t", "--ip", "10.0.0.1/24", "--tap-mtu", "2000", "-m", "2048"}, 0, true},
	} {
		_, tf, err := parseTAP(t, false, c.args...)
		if err != nil {
			t.Fatal(err)
		}
		v, _ := tf.fs.GetInt("mtu")
		err = tf.tapPathMTU("mtu", &v)
		if (err != nil) != c.err || !c.err && v != c.want {
			t.Errorf("%q: path MTU %d, %v; want %d (error %v)", c.args, v, err, c.want, c.err)
		}
	}
}

// TestTAPCommandUsage: each command refuses bad TAP flags with status 2
// before opening anything.
func TestTAPCommandUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"pingpong", "--tap", "t0"}, "--tap without --ip"},
		{[]string{"pingpong", "--ip", "10.0.0.1/24"}, "--ip without --tap"},
		{[]string{"pingpong", "--tap", "a", "--tap", "b", "--ip", "10.0.0.1/24", "--ip", "10.0.0.2/24"}, "one --tap"},
		{[]string{"pingpong", "--tap", "t0", "--ip", "10.0.0.1/24", "-m", "2048"}, "does not fit"},
		{[]string{"perf", "--tap", "t0", "--ip", "10.0.0.1/24", "--mtu", "4096", "--serve"}, "does not fit"},
		{[]string{"perf", "--tap", "t0", "--ip", "10.0.0.1/24"}, "two NICs"},
		{[]string{"perf", "--tap", "a", "--tap", "b", "--tap", "c", "--ip", "10.0.0.1/24", "--ip", "10.0.0.2/24", "--ip", "10.0.0.3/24"}, "at most two"},
		{[]string{"perf", "--iwarp", "--tap", "t0", "--ip", "10.0.0.1/24"}, "two NICs"},
		{[]string{"demo", "--tap", "t0", "--ip", "10.0.0.1/24"}, "demo needs two NICs"},
		{[]string{"demo", "--tap", "a", "--tap", "b", "--ip", "10.0.0.1/24"}, "one --ip per NIC"},
		{[]string{"demo", "--mac", "02:00:00:00:00:01"}, "--mac without --tap"},
	} {
		_, errOut, code := rnic(t, c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: %d %q, want 2 and %q", c.args, code, errOut, c.want)
		}
	}
	for _, cmd := range []string{"pingpong", "perf", "demo"} {
		out, _, code := rnic(t, "help", cmd)
		if code != 0 || !strings.Contains(out, "TAP mode (--tap NAME --ip CIDR, root)") || !strings.Contains(out, "--tap-mtu") || !strings.Contains(out, "--bridge") {
			t.Errorf("help %s lacks the TAP mode:\n%s", cmd, out)
		}
	}
}
