package dropin

import (
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// qperf 0.4.11, unmodified, on the drop-in libraries: its rdma_cm mode
// (-cm1) over RoCEv2 and iWARP, and what it does as on Linux rxe where
// rnic behaves as rxe does (its own exchange without a GRH, UD through
// rdma_cm).

// needTool skips when a program of Debian package pkg is not installed.
func needTool(t *testing.T, pkg string, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			t.Skipf("%s is not installed: apt-get install %s", n, pkg)
		}
	}
}

// qperfServer starts qperf's server on d, on its TCP port (-lp, every
// address), and waits until it listens; it is killed with the test.
func (d *daemon) qperfServer(t *testing.T) (port string) {
	t.Helper()
	p := freeTCPPort(t)
	srv := d.run(t, "qperf server", "", nil, lineBuffered([]string{"qperf", "-lp", strconv.Itoa(p)})...)
	t.Cleanup(srv.kill)
	deadline := time.After(programTimeout)
	for !listening(srv.cmd.Process.Pid, p) {
		select {
		case <-srv.done:
			t.Fatalf("qperf's server ended\n%s", srv.report())
		case <-deadline:
			t.Fatalf("qperf's server did not listen on %d\n%s", p, srv.report())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return strconv.Itoa(p)
}

// qperf runs qperf's client of test toward the server on d's rnic0; -to
// gives its exchanges with the server the time a busy machine needs.
func (d *daemon) qperf(t *testing.T, port string, args ...string) *proc {
	t.Helper()
	return d.runOne(t, append([]string{"qperf", d.addrs[0], "-lp", port, "-to", "30", "-t", "1"}, args...)...)
}

var (
	qperfBW  = regexp.MustCompile(`(?m)^\s+bw\s+=\s+([0-9.]+ [KMG]?B/sec)$`)
	qperfLat = regexp.MustCompile(`(?m)^\s+latency\s+=\s+([0-9.]+ [mun]?s)$`)
)

// qperfRows are TestQperf's tests on each transport. On iWARP neither
// rc_rdma_write_bw (it writes with immediate data, which iWARP has not:
// siw refuses the opcode) nor rc_bw (its client keeps as many SENDs in
// flight as the server has receives posted and reposts on each send
// completion; iWARP has no RNR retry, so a SEND that finds the receiver
// behind ends the connection, on siw too): rc_rdma_read_bw measures
// bandwidth there.
var qperfRows = map[string][]string{
	nicUDP: {"rc_bw", "rc_lat", "rc_rdma_write_bw", "rc_rdma_read_bw", "rc_rdma_read_lat"},
	nicTCP: {"rc_lat", "rc_rdma_write_lat", "rc_rdma_read_bw", "rc_rdma_read_lat"},
}

// TestQperf: qperf's RC tests through rdma_cm (-cm1: the server binds
// the wildcard and port 0 and sends the port rdma_get_src_port gives to
// the client before it listens; the client connects to it from rnic0's
// own address, so both ends are on rnic0, as on a host with one rxe), over
// RoCEv2 and iWARP. Each prints its measurement, logged.
func TestQperf(t *testing.T) {
	needLibrary(t)
	needTool(t, "qperf", "qperf")
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			d := sharedDaemonOf(t, tr.kind)
			port := d.qperfServer(t)
			for _, test := range qperfRows[tr.kind] {
				t.Run(test, func(t *testing.T) {
					want := qperfLat
					if strings.HasSuffix(test, "_bw") {
						want = qperfBW
					}
					p := d.qperf(t, port, "-cm1", test)
					m := want.FindStringSubmatch(p.out.String())
					if !p.ok() || m == nil {
						t.Fatalf("no measurement\n%s\n%s", p.report(), d.p.report())
					}
					t.Logf("%s %s: %s", tr.name, test, m[1])
				})
			}
		})
	}
}

// TestQperfAsRxe: where qperf fails on Linux's rxe, it fails the same way
// on rnic's RoCEv2 NICs. Without -cm1 its exchange gives no GID, so the
// QP's path has no GRH, which RoCE requires (RTR: EINVAL); ud_lat through
// rdma_cm makes the server's address handle from CONNECT_REQUEST's
// param.ud.ah_attr, which the kernel's rdma_cm leaves zero for a SIDR
// request (no GRH: EINVAL).
func TestQperfAsRxe(t *testing.T) {
	needLibrary(t)
	needTool(t, "qperf", "qperf")
	d := sharedDaemon(t)
	port := d.qperfServer(t)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"rc_bw-no-cm", []string{"rc_bw"}, `failed to modify QP to RTR: Invalid argument`},
		{"ud_lat-cm1", []string{"-cm1", "ud_lat"}, `failed to create address handle: Invalid argument`},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := d.qperf(t, port, c.args...)
			if p.ok() {
				t.Fatalf("qperf %v succeeded where it fails on rxe\n%s", c.args, p.report())
			}
			mustMatch(t, p, c.want)
		})
	}
}
