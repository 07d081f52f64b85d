package main

import (
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rnic/rnic/tap/taptest"
)

func TestRpingFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"rping"}, 2, "give -s (server) or -c (client)"},
		{[]string{"rping", "-s", "-c", "--iwarp"}, 2, "not both"},
		{[]string{"rping", "-c", "--iwarp"}, 2, "needs the server's address"},
		{[]string{"rping", "-c", "-a", "127.0.8.1", "-S", "25", "--iwarp"}, 2, "Invalid size 25 (valid range is 26 to 65536)"},
		{[]string{"rping", "-c", "-a", "127.0.8.1", "-C", "-1", "--iwarp"}, 2, "Invalid count -1"},
		{[]string{"rping", "-s"}, 2, "needs an address of its own (-a)"},
		{[]string{"rping", "-c", "-a", "127.0.8.1", "--mpa-crc"}, 2, "MPA CRCs are iWARP's"},
		{[]string{"rping", "-c", "-a", "no such host!", "--iwarp"}, 2, "invalid hostname or IP address"},
		{[]string{"rping", "-s", "--iwarp", "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"rping", "-s", "--iwarp", "--bogus"}, 2, "unknown flag: --bogus"},
		{[]string{"rping", "-s", "--iwarp", "--ip", "10.0.0.1/24"}, 2, "--ip without --tap"},
		{[]string{"rping", "-s", "--iwarp", "--tap", "t0"}, 2, "--tap without --ip"},
		{[]string{"rping", "-s", "--iwarp", "--tap", "t0", "--tap", "t1", "--ip", "10.0.0.1/24", "--ip", "10.0.0.2/24"}, 2, "one --tap"},
		{[]string{"rping", "-c", "-a", "127.0.8.1", "--ib-dev", "a b"}, 2, `--ib-dev: ibv: device string "a b": bad device name`},
		{[]string{"rping", "-c", "-a", "127.0.8.1", "--ib-dev", "verbs:"}, 2, "bad device name"},
		{[]string{"rping", "-c", "-a", "127.0.8.1", "--iwarp", "--ib-dev", "verbs:rxe0"}, 2, "--iwarp runs on this process's NIC"},
		{[]string{"rping", "-s", "--ib-dev", "rnic0@/x.sock", "--tap", "t0", "--ip", "10.0.0.1/24"}, 2, "the TAP mode is this process's NIC"},
	} {
		out, errOut, code := rnic(t, c.args...)
		if code != c.code || !strings.Contains(errOut, c.stderr) || out != "" {
			t.Errorf("rnic %q: status %d, stdout %q, stderr %q; want %d, %q", c.args, code, out, errOut, c.code, c.stderr)
		}
	}
}

func TestRpingHelp(t *testing.T) {
	out, _, code := rnic(t, "help", "rping")
	if code != 0 || !strings.Contains(out, "--iwarp") || !strings.Contains(out, "-C, --count") || !strings.Contains(out, "--ib-dev string") {
		t.Fatalf("rnic help rping: status %d, %q", code, out)
	}
}

func TestRpingEmbedded(t *testing.T) {
	// Both sides through the command line, in the embedded mode on
	// loopback: the server on a port of its own, the client validating.
	srvDone := make(chan [3]any, 1)
	go func() {
		out, errOut, code := rnic(t, "rping", "-s", "-a", "127.0.8.5", "-p", "17174", "-v", "--iwarp")
		srvDone <- [3]any{out, errOut, code}
	}()
	var out, errOut string
	var code int
	// The server may not listen yet: a refused connection is retried.
	for range 100 {
		out, errOut, code = rnic(t, "rping", "-c", "-a", "127.0.8.5", "-I", "127.0.8.6", "-p", "17174", "-v", "-V", "-C", "3", "--iwarp")
		if code == 0 || !strings.Contains(errOut, "refused") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code != 0 || !strings.HasPrefix(out, "ping data: rdma-ping-0: ABCDEFG") || strings.Count(out, "\n") != 3 {
		t.Fatalf("client: status %d, stdout %q, stderr %q", code, out, errOut)
	}
	s := <-srvDone
	if s[2].(int) != 0 || strings.Count(s[0].(string), "server ping data: rdma-ping-") != 3 {
		t.Fatalf("server: status %d, stdout %q, stderr %q", s[2], s[0], s[1])
	}
}

func TestRpingRoCEEmbedded(t *testing.T) {
	// rping over RoCEv2 (the default) through the command line: two
	// embedded NICs on loopback, rdma_cm's MADs on QP1 between them.
	rpingRoCE(t, nil)
}

// TestRpingRoCEEmbeddedNamed: a local --ib-dev names the client's NIC and
// changes nothing else.
func TestRpingRoCEEmbeddedNamed(t *testing.T) {
	rpingRoCE(t, []string{"--ib-dev", "rnic5"})
}

// rpingRoCE runs an embedded-mode server at 127.0.9.5 and a client with
// cliFlags from 127.0.9.6, three pings.
func rpingRoCE(t *testing.T, cliFlags []string) {
	t.Helper()
	srvDone := make(chan [3]any, 1)
	go func() {
		out, errOut, code := rnic(t, "rping", "-s", "-a", "127.0.9.5", "-v")
		srvDone <- [3]any{out, errOut, code}
	}()
	// Wait for the server's NIC (its UDP port 4791 taken), then connect;
	// a REQ that comes before the listener is rejected and retried.
	// Look, do not bind: a probe that binds the port itself can take it
	// in the instant the server tries, and the server then fails.
	for range 500 {
		if udpBound(t, netip.MustParseAddrPort("127.0.9.5:4791")) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	var out, errOut string
	var code int
	for range 100 {
		out, errOut, code = rnic(t, append([]string{"rping", "-c", "-a", "127.0.9.5", "-I", "127.0.9.6", "-v", "-V", "-C", "3"}, cliFlags...)...)
		if code == 0 || !strings.Contains(errOut, "rejected") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code != 0 || !strings.HasPrefix(out, "ping data: rdma-ping-0: ABCDEFG") || strings.Count(out, "\n") != 3 ||
		withoutWaitNotice(errOut) != "client DISCONNECT EVENT...\n" {
		t.Fatalf("client: status %d, stdout %q, stderr %q", code, out, errOut)
	}
	select {
	case s := <-srvDone:
		if s[2].(int) != 0 || strings.Count(s[0].(string), "server ping data: rdma-ping-") != 3 {
			t.Fatalf("server: status %d, stdout %q, stderr %q", s[2], s[0], s[1])
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not end after the client's DREQ")
	}
}

// TestRpingIBDevOpenFails: a device string for another process's NIC is
// opened, not built; when it cannot be (no rnicd there, or no rnicd client
// in this binary), rping fails with the device named and no ping made.
func TestRpingIBDevOpenFails(t *testing.T) {
	out, errOut, code := rnic(t, "rping", "-c", "-a", "127.0.9.5", "-C", "1", "--ib-dev", "rnic0@/nonexistent/rnicd.sock")
	if code != 1 || out != "" || !strings.Contains(errOut, "rnic0@/nonexistent/rnicd.sock") {
		t.Fatalf("status %d, stdout %q, stderr %q; want 1 and an error naming the device", code, out, errOut)
	}
}

// TestRpingTAP: rping over real TAPs (root): the server's NIC on one TAP,
// the client's on another, one bridge in a namespace the test creates;
// over RoCEv2 (the client's NIC named by --ib-dev) and over iWARP.
func TestRpingTAP(t *testing.T) {
	tn := taptest.New(t, 74)
	srv, cli := tn.Addr4(2), tn.Addr4(3)
	nicFlags := func(tap string, p netip.Prefix) []string {
		return []string{"--tap", tap, "--ip", p.String(), "--netns", tn.Name, "--bridge", tn.Bridge}
	}
	for _, mode := range []struct {
		name  string
		flags []string
		retry string // what a client that came too early says
	}{
		{"RoCE", []string{"--ib-dev", "rnic4"}, "rejected"},
		{"iWARP", []string{"--iwarp"}, "refused"},
	} {
		t.Run(mode.name, func(t *testing.T) {
			s := start(t, "rping server", append(append([]string{"rping", "-s", "-a", srv.Addr().String(), "-v"},
				mode.flags...), nicFlags("t-a", srv)...)...)
			if out, ok := tn.Ping(srv.Addr(), 10*time.Second); !ok {
				t.Fatalf("ping %v: %s\nserver: %s", srv.Addr(), out, s.out.String())
			}
			var out string
			for range 20 {
				c := start(t, "rping client", append(append([]string{"rping", "-c", "-a", srv.Addr().String(), "-C", "3", "-V", "-v"},
					mode.flags...), nicFlags("t-b", cli)...)...)
				select {
				case <-c.done:
				case <-time.After(60 * time.Second):
					t.Fatalf("client did not finish: %s", c.out.String())
				}
				out = c.out.String()
				if c.err == nil || !strings.Contains(out, mode.retry) {
					if c.err != nil {
						t.Fatalf("client: %v\n%s", c.err, out)
					}
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if strings.Count(out, "ping data: rdma-ping-") != 3 {
				t.Fatalf("client output %q: want 3 pings", out)
			}
			if sout := s.wait(t, 60*time.Second); strings.Count(sout, "server ping data: rdma-ping-") != 3 {
				t.Fatalf("server output %q", sout)
			}
		})
	}
}

// withoutWaitNotice drops the line a client writes when its connection
// takes more than a second (a REQ lost or rejected on a busy machine).
func withoutWaitNotice(s string) string {
	var out []string
	for _, l := range strings.SplitAfter(s, "\n") {
		if !strings.HasPrefix(l, "rping: waiting for ") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "")
}

// udpBound reports whether a UDP socket of this network namespace is bound
// to ap (IPv4), by /proc/net/udp, whose local address column is the
// address in the kernel's byte order and the port, both in hex.
func udpBound(t *testing.T, ap netip.AddrPort) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/net/udp")
	if err != nil {
		t.Fatalf("read /proc/net/udp: %v", err)
	}
	a := ap.Addr().As4()
	want := fmt.Sprintf("%02X%02X%02X%02X:%04X", a[3], a[2], a[1], a[0], ap.Port())
	for _, line := range strings.Split(string(b), "\n")[1:] {
		if f := strings.Fields(line); len(f) > 1 && f[1] == want {
			return true
		}
	}
	return false
}
