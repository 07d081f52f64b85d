package main

// The tools as clients of a real rnicd (a test daemon in this process,
// nic/rnicd/rnicdtest): pingpong's side channel through the daemon's
// network, rping's connection through the daemon's rdma_cm.

import (
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/client"
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
)

// startRnicd starts a test daemon with the real client as the rnicd
// backend (another test of this package may have replaced it).
func startRnicd(t *testing.T, nics int) *rnicdtest.Daemon {
	t.Helper()
	ibv.Register(ibv.BackendDaemon, func(s ibv.Spec) (ibv.Device, error) {
		d, err := client.Open(s)
		if err != nil {
			return nil, err
		}
		return d.WithCapabilities(), nil
	})
	return rnicdtest.Start(t, rnicdtest.Options{NICs: nics})
}

// tcpPortOf returns a TCP port of addr that was free a moment ago.
func tcpPortOf(t *testing.T, addr string) string {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// TestPingpongThroughRnicd: rnic pingpong -d rnic0@SOCK, server and
// client as two clients of one daemon NIC; the exchange runs on the
// daemon's network (the client finds the server at the NIC's address).
func TestPingpongThroughRnicd(t *testing.T) {
	for _, nics := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d NICs", nics), func(t *testing.T) {
			d := startRnicd(t, nics)
			srvAddr, cliAddr := d.NICs[0].Addr.String(), d.NICs[nics-1].Addr.String()
			port := tcpPortOf(t, srvAddr)
			common := []string{"pingpong", "-p", port, "-n", "50", "-s", "100", "-g", "0", "--chk"}
			sOut, sErr, sCode, cOut, cErr, cCode := both(t,
				append(append([]string{}, common...), "-d", d.Spec(0).String()),
				append(append([]string{}, common...), "-d", d.Spec(nics-1).String(), srvAddr))
			if sCode != 0 || cCode != 0 {
				t.Fatalf("server %d: %s%s\nclient %d: %s%s", sCode, sOut, sErr, cCode, cOut, cErr)
			}
			addr := `LID 0x0000, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}, GID `
			re := regexp.MustCompile(`^  local address:  ` + addr + regexp.QuoteMeta("::ffff:"+cliAddr) + "\n" +
				`  remote address: ` + addr + regexp.QuoteMeta("::ffff:"+srvAddr) + "\n" +
				`10000 bytes in \d+\.\d\d seconds = \d+\.\d\d Mbit/sec` + "\n" +
				`50 iters in \d+\.\d\d seconds = \d+\.\d\d usec/iter` + "\n$")
			if !re.MatchString(cOut) {
				t.Errorf("client output does not match %s:\n%s", re, cOut)
			}
		})
	}
}

// TestRpingThroughRnicd: rnic rping --ib-dev rnic0@SOCK, server and
// client as two clients of one daemon: the daemon's CM connects them,
// three pings go, the client's disconnect ends the server.
func TestRpingThroughRnicd(t *testing.T) {
	d := startRnicd(t, 1)
	dev, addr := d.Spec(0).String(), d.NICs[0].Addr.String()
	srvDone := make(chan [3]any, 1)
	go func() {
		out, errOut, code := rnic(t, "rping", "-s", "-a", addr, "-p", "17175", "-v", "--ib-dev", dev)
		srvDone <- [3]any{out, errOut, code}
	}()
	var out, errOut string
	var code int
	// A REQ before the server listens is rejected: retried.
	for range 200 {
		out, errOut, code = rnic(t, "rping", "-c", "-a", addr, "-p", "17175", "-v", "-V", "-C", "3", "--ib-dev", dev)
		if code == 0 || !strings.Contains(errOut, "rejected") {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if code != 0 || !strings.HasPrefix(out, "ping data: rdma-ping-0: ABCDEFG") || strings.Count(out, "\n") != 3 {
		t.Fatalf("client: status %d, stdout %q, stderr %q", code, out, errOut)
	}
	select {
	case s := <-srvDone:
		if s[2].(int) != 0 || strings.Count(s[0].(string), "server ping data: rdma-ping-") != 3 {
			t.Fatalf("server: status %d, stdout %q, stderr %q", s[2], s[0], s[1])
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not end after the client's disconnect")
	}
}
