package cdispec_test

// Waiting for a server in a container before its client starts: the
// client of ibv_rc_pingpong or perftest gives up at once if nobody
// listens, and a container takes seconds to start on a busy machine.

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// rdma_cm servers are ready when the drop-in librdmacm's trace says so
// (RNIC_CM_TRACE=1): no kernel socket shows it.
const cmTraceListening = "rnic rdmacm: listening on port "

// waitTCPListen waits until a TCP socket listens on port in the network
// namespace of process pid (the test's own: os.Getpid()), failing t if
// srv ends first or the time runs out.
func waitTCPListen(t *testing.T, srv *proc, pid int, port string) {
	t.Helper()
	waitFor(t, srv, func() bool { return listening(pid, port) })
}

// waitOutput waits until srv prints text.
func waitOutput(t *testing.T, srv *proc, text string) {
	t.Helper()
	waitFor(t, srv, func() bool { return strings.Contains(srv.out.String(), text) })
}

func waitFor(t *testing.T, srv *proc, ready func() bool) {
	t.Helper()
	deadline := time.After(programTimeout)
	for !ready() {
		select {
		case <-srv.done:
			t.Fatalf("%s ended before it was ready: %v\n%s", srv.name, srv.err, srv.out.String())
		case <-deadline:
			t.Fatalf("%s not ready within %v\n%s", srv.name, programTimeout, srv.out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// listening reads /proc/PID/net/tcp and tcp6 for a socket in state LISTEN
// (0A) on port.
func listening(pid int, port string) bool {
	var p int
	fmt.Sscan(port, &p)
	local := fmt.Sprintf(":%04X", p)
	for _, f := range []string{"tcp", "tcp6"} {
		fh, err := os.Open(fmt.Sprintf("/proc/%d/net/%s", pid, f))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) > 3 && strings.HasSuffix(fields[1], local) && fields[3] == "0A" {
				fh.Close()
				return true
			}
		}
		fh.Close()
	}
	return false
}
