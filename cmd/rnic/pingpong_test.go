package main

import (
	"bytes"
	"github.com/rnic/rnic/transport/porttest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// freePort returns a TCP port that was free a moment ago, below the
// ephemeral range (porttest.FreePort).
func freePort(t *testing.T) string {
	t.Helper()
	p, err := porttest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return strconv.Itoa(p)
}

// both runs a server and a client command line concurrently, the server
// first, and returns their outputs and statuses.
func both(t *testing.T, server, client []string) (sOut, sErr string, sCode int, cOut, cErr string, cCode int) {
	t.Helper()
	var wg sync.WaitGroup
	var so, se bytes.Buffer
	wg.Add(1)
	go func() {
		defer wg.Done()
		sCode = run(server, &so, &se)
	}()
	cOut, cErr, cCode = rnic(t, client...)
	wg.Wait()
	return so.String(), se.String(), sCode, cOut, cErr, cCode
}

// Over loopback UDP on a port of its own (see the nic packages' tests).
const cmdTestRDMAPort = "24793"

func TestPingpongCommand(t *testing.T) {
	port := freePort(t)
	common := []string{"pingpong", "-p", port, "--rdma-port", cmdTestRDMAPort, "-n", "50", "-s", "100", "-g", "0"}
	sOut, sErr, sCode, cOut, cErr, cCode := both(t, common, append(append([]string{}, common...), "--chk", "127.0.0.2"))
	if sCode != 0 || cCode != 0 {
		t.Fatalf("server %d: %s%s\nclient %d: %s%s", sCode, sOut, sErr, cCode, cOut, cErr)
	}
	addr := `LID 0x0000, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}, GID `
	for _, c := range []struct{ out, local, remote string }{
		{sOut, "::ffff:127.0.0.2", "::ffff:127.0.0.3"}, {cOut, "::ffff:127.0.0.3", "::ffff:127.0.0.2"},
	} {
		re := regexp.MustCompile(`^  local address:  ` + addr + regexp.QuoteMeta(c.local) + "\n" +
			`  remote address: ` + addr + regexp.QuoteMeta(c.remote) + "\n" +
			`10000 bytes in \d+\.\d\d seconds = \d+\.\d\d Mbit/sec` + "\n" +
			`50 iters in \d+\.\d\d seconds = \d+\.\d\d usec/iter` + "\n$")
		if !re.MatchString(c.out) {
			t.Errorf("output does not match %s:\n%s", re, c.out)
		}
	}
}

// TestPingpongCommandFailure: a failed completion exits 1 with
// ibv_rc_pingpong's message.
func TestPingpongCommandFailure(t *testing.T) {
	port := freePort(t)
	common := []string{"pingpong", "-p", port, "--rdma-port", cmdTestRDMAPort, "-n", "5"}
	_, sErr, sCode, _, cErr, cCode := both(t, append(append([]string{}, common...), "-s", "64"),
		append(append([]string{}, common...), "-s", "128", "127.0.0.2"))
	if sCode != 1 || sErr != "Failed status local length error (1) for wr_id 1\n" {
		t.Errorf("server: %d %q", sCode, sErr)
	}
	if cCode != 1 || cErr != "Failed status remote invalid request error (9) for wr_id 2\n" {
		t.Errorf("client: %d %q", cCode, cErr)
	}
}

func TestPingpongUsage(t *testing.T) {
	for _, c := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"pingpong", "-m", "1500"}, 2, "-m/--mtu 1500: must be 256, 512, 1024, 2048 or 4096"},
		{[]string{"pingpong", "--bogus"}, 2, "unknown flag: --bogus"},
		{[]string{"pingpong", "a", "b"}, 2, `unexpected argument "b"`},
		{[]string{"pingpong", "--addr", "nope"}, 2, "--addr"},
	} {
		_, errOut, code := rnic(t, c.args...)
		if code != c.code || !strings.Contains(errOut, c.stderr) {
			t.Errorf("%q: %d %q, want %d %q", c.args, code, errOut, c.code, c.stderr)
		}
	}
	out, _, code := rnic(t, "help", "pingpong")
	if code != 0 || !strings.Contains(out, "--gid-idx") || !strings.Contains(out, "ibv_rc_pingpong") {
		t.Errorf("help: %d\n%s", code, out)
	}
}
