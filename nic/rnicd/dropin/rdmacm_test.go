package dropin

import (
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rnic/rnic/transport/porttest"
)

// The rdma_cm programs of rdmacm-utils and perftest -R, unmodified, on
// the drop-in librdmacm.so.1: server on rnic0, client on rnic1 of the
// shared daemon (rdma_cm ports are the daemon's CM's, so each test takes
// a random one).

// cmPort is a random rdma_cm port. On RoCEv2 it is the daemon's CM's port
// space; on iWARP a real TCP port of the NIC's address, so it is taken
// below the kernel's ephemeral range: a connection of an earlier test may
// still hold an ephemeral port there (the listen would fail, EADDRINUSE).
func cmPort() string {
	p, err := porttest.FreePort()
	if err != nil {
		panic(err) // no free port below the range: nothing to test on
	}
	return strconv.Itoa(p)
}

// cmTraceListening is the line RNIC_CM_TRACE=1 makes the library print
// once rdma_listen succeeded: no socket shows that an rdma_cm server is
// ready, so the tests wait for it.
const cmTraceListening = "rnic rdmacm: listening on port "

// startCMServer starts argv through rnic exec with the library's trace on
// and waits until it listens.
func (d *daemon) startCMServer(t *testing.T, deadline <-chan time.Time, argv ...string) *proc {
	t.Helper()
	return d.startCMServerEnv(t, deadline, nil, argv...)
}

// startCMServerEnv is startCMServer with env added to the server's.
func (d *daemon) startCMServerEnv(t *testing.T, deadline <-chan time.Time, env []string, argv ...string) *proc {
	t.Helper()
	env = append([]string{"RNIC_CM_TRACE=1"}, env...)
	srv := start(t, "server", env, nil, append([]string{build.rnic, "exec", "-S", d.socket, "--"}, argv...)...)
	for !strings.Contains(srv.out.String(), cmTraceListening) {
		select {
		case <-srv.done:
			t.Fatalf("the server ended before listening\n%s\n%s", srv.report(), d.p.report())
		case <-deadline:
			srv.kill()
			t.Fatalf("the server did not listen\n%s", srv.report())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return srv
}

// runCMPair runs an rdma_cm server until it listens, then its client;
// both must exit 0 (a server that never ends by itself, as cmtime's, is
// ended once the client is done: endless).
func (d *daemon) runCMPair(t *testing.T, endless bool, server, client []string) (srv, cli *proc) {
	t.Helper()
	srv, cli, ok := d.tryCMPair(t, endless, server, client)
	if !ok {
		t.Fatalf("server/client pair failed\n%s\n%s\n%s", srv.report(), cli.report(), d.p.report())
	}
	return srv, cli
}

// tryCMPair is runCMPair, reporting failure rather than failing.
func (d *daemon) tryCMPair(t *testing.T, endless bool, server, client []string) (srv, cli *proc, ok bool) {
	t.Helper()
	deadline := time.After(programTimeout)
	srv = d.startCMServer(t, deadline, server...)
	cli = d.run(t, "client", "", nil, client...)
	cli.wait(deadline)
	if endless {
		srv.kill()
		return srv, cli, cli.ok()
	}
	if !cli.ok() {
		srv.wait(time.After(2 * time.Second))
	}
	srv.wait(deadline)
	return srv, cli, srv.ok() && cli.ok()
}

// mustMatch fails unless p's output matches every pattern.
func mustMatch(t *testing.T, p *proc, patterns ...string) {
	t.Helper()
	for _, w := range patterns {
		if !regexp.MustCompile(w).MatchString(p.out.String()) {
			t.Errorf("%s: no match for %s\n%s", p.name, w, p.report())
		}
	}
}

// TestRping: rping, 100 pings (RDMA READ and WRITE of the buffers it
// advertises, checked by -v), with the server bound to rnic0's address or
// to the wildcard, and the client bound to rnic1's or not (then rnic0
// connects to itself).
func TestRping(t *testing.T) {
	needLibrary(t)
	needPrograms(t, "rping")
	for _, c := range []struct {
		name         string
		bind, source bool
	}{{"bound", true, true}, {"wildcard", false, true}, {"samenic", true, false}} {
		t.Run(c.name, func(t *testing.T) {
			d := sharedDaemon(t)
			port := cmPort()
			server := []string{"rping", "-s", "-v", "-C", "100", "-p", port}
			if c.bind {
				server = append(server, "-a", d.addrs[0])
			}
			client := []string{"rping", "-c", "-v", "-C", "100", "-p", port, "-a", d.addrs[0]}
			if c.source {
				client = append(client, "-I", d.addrs[1])
			}
			srv, cli := d.runCMPair(t, false, server, client)
			// (rping's client may exit before its event thread prints
			// the DISCONNECTED it got: not checked)
			mustMatch(t, cli, `(?m)^ping data: rdma-ping-99: `)
			mustMatch(t, srv, `(?m)^server ping data: rdma-ping-99: `)
			// rxe's rdma_cm sends TIMEWAIT_EXIT only after the CM's
			// timewait, by when rping has destroyed its ids
			for _, p := range []*proc{srv, cli} {
				if strings.Contains(p.out.String(), "unhandled event") {
					t.Errorf("%s got an event rping does not expect\n%s", p.name, p.report())
				}
			}
		})
	}
}

// TestRpingIWARP: rping on a daemon whose NICs are iWARP ones (--tcp):
// the library learns the transport from OPEN (ibv_devinfo shows iWARP and
// no RoCE v2 GID), librdmacm finds the iWARP NICs by their addresses, and
// the daemon's CM sets the connection up through MPA; the pings' RDMA READs
// and WRITEs go over RDMAP/DDP/MPA on kernel TCP.
func TestRpingIWARP(t *testing.T) {
	needLibrary(t)
	needPrograms(t, "rping", "ibv_devinfo")
	d := sharedDaemonOf(t, nicTCP)
	for i, name := range []string{"rnic0", "rnic1"} {
		p := d.runOne(t, "ibv_devinfo", "-v", "-d", name)
		if !p.ok() {
			t.Fatal(p.report())
		}
		// The engine's limits: IRD/ORD as large as a byte holds, RFC 7306
		// atomics on host memory with atomic instructions; no RNR, no UD.
		mustMatch(t, p, `(?m)^\s+transport:\s+iWARP \(1\)$`,
			`(?m)^\s+GID\[\s*0\]:\s+0000:0000:0000:0000:0000:ffff:`+ipv4Hex(t, d.addrs[i])+`, RoCE v1$`,
			`(?m)^\s+max_qp_rd_atom:\s+255$`, `(?m)^\s+max_qp_init_rd_atom:\s+255$`,
			`(?m)^\s+atomic_cap:\s+ATOMIC_GLOB \(2\)$`)
		for _, no := range []string{"RoCE v2", "RC_RNR_NAK_GEN", "UD_AV_PORT_ENFORCE"} {
			if strings.Contains(p.out.String(), no) {
				t.Errorf("%s: an iWARP NIC with %s\n%s", name, no, p.report())
			}
		}
	}
	port := cmPort()
	srv, cli := d.runCMPair(t, false,
		[]string{"rping", "-s", "-v", "-C", "10", "-p", port, "-a", d.addrs[0]},
		[]string{"rping", "-c", "-v", "-C", "10", "-p", port, "-a", d.addrs[0], "-I", d.addrs[1]})
	mustMatch(t, cli, `(?m)^ping data: rdma-ping-9: `)
	mustMatch(t, srv, `(?m)^server ping data: rdma-ping-9: `)
	for _, p := range []*proc{srv, cli} {
		// the kernel's iWARP CM has no timewait: no TIMEWAIT_EXIT
		if strings.Contains(p.out.String(), "RDMA_CM_EVENT_TIMEWAIT_EXIT") {
			t.Errorf("%s got TIMEWAIT_EXIT on iWARP\n%s", p.name, p.report())
		}
	}
}

// ipv4Hex is addr as ibv_devinfo prints the last 32 bits of a GID it
// does not show as an address: "7f00:0901".
func ipv4Hex(t *testing.T, addr string) string {
	t.Helper()
	a, err := netip.ParseAddr(addr)
	if err != nil || !a.Is4() {
		t.Fatalf("%q: not an IPv4 address", addr)
	}
	b := a.As4()
	return fmt.Sprintf("%02x%02x:%02x%02x", b[0], b[1], b[2], b[3])
}

// TestUcmatose: ucmatose, several connections at once, each sending
// messages both ways, then disconnecting; over RoCEv2 and iWARP.
func TestUcmatose(t *testing.T) {
	needLibrary(t)
	needPrograms(t, "ucmatose")
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			d := sharedDaemonOf(t, tr.kind)
			port := cmPort()
			srv, cli := d.runCMPair(t, false,
				[]string{"ucmatose", "-p", port, "-c", "8", "-C", "20"},
				[]string{"ucmatose", "-s", d.addrs[0], "-b", d.addrs[1], "-p", port, "-c", "8", "-C", "20"})
			for _, p := range []*proc{srv, cli} {
				mustMatch(t, p, `(?m)^data transfers complete$`, `(?m)^return status 0$`)
			}
		})
	}
}

// TestRdmaServerClient: rdma_server / rdma_client, the synchronous API
// (no event channel: rdma_create_ep, rdma_get_request, rdma_connect that
// return once done) and the <rdma/rdma_verbs.h> inlines; over RoCEv2 and
// iWARP.
func TestRdmaServerClient(t *testing.T) {
	needLibrary(t)
	needPrograms(t, "rdma_server", "rdma_client")
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			d := sharedDaemonOf(t, tr.kind)
			port := cmPort()
			srv, cli := d.runCMPair(t, false, []string{"rdma_server", "-p", port},
				[]string{"rdma_client", "-s", d.addrs[0], "-p", port})
			mustMatch(t, srv, `(?m)^rdma_server: end 0$`)
			mustMatch(t, cli, `(?m)^rdma_client: end 0$`)
		})
	}
}

// TestRdmaXServerClient: rdma_xserver / rdma_xclient over RC, RoCEv2 and
// iWARP (their XRC mode needs XRC QPs, which rnic does not have, and iWARP
// has none at all). The client posts a 16-byte inline SEND on a QP it
// created with max_inline_data 0 and one SGE: it works because
// ibv_create_qp grants the WQE's SGE space as inline bytes, as rxe and
// mlx5 do.
func TestRdmaXServerClient(t *testing.T) {
	needLibrary(t)
	needPrograms(t, "rdma_xserver", "rdma_xclient")
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			d := sharedDaemonOf(t, tr.kind)
			port := cmPort()
			srv, cli := d.runCMPair(t, false, []string{"rdma_xserver", "-p", port, "-c", "r"},
				[]string{"rdma_xclient", "-s", d.addrs[0], "-p", port, "-c", "r"})
			mustMatch(t, srv, `(?m)^rdma_xserver: end 0$`)
			mustMatch(t, cli, `(?m)^rdma_xclient: end 0$`)
		})
	}
}

// TestUdaddy: udaddy's UD ids resolve each other over SIDR (SIDR_REQ /
// SIDR_REP through rnicd's CM): the server's CONNECT_REQUEST, the
// client's ESTABLISHED with param.ud's QPN, Q_Key and AH attributes, then
// UD sends both ways on two "connections". Its port is fixed (7174).
func TestUdaddy(t *testing.T) {
	needLibrary(t)
	needPrograms(t, "udaddy")
	d := sharedDaemon(t)
	srv, cli := d.runCMPair(t, false, []string{"udaddy", "-b", d.addrs[0], "-c", "2", "-C", "10"},
		[]string{"udaddy", "-s", d.addrs[0], "-b", d.addrs[1], "-c", "2", "-C", "10"})
	for _, p := range []*proc{srv, cli} {
		mustMatch(t, p, `(?m)^data transfers complete$`, `(?m)^test complete$`)
	}
}

// TestUdaddyIWARP: iWARP has no UD QPs (nor SIDR): udaddy's server fails
// to listen and its client to create its QP, both with EOPNOTSUPP, as on
// Linux siw, and both end at once.
func TestUdaddyIWARP(t *testing.T) {
	needLibrary(t)
	needPrograms(t, "udaddy")
	d := sharedDaemonOf(t, nicTCP)
	deadline := time.After(programTimeout)
	srv := d.run(t, "server", "", nil, lineBuffered([]string{"udaddy", "-b", d.addrs[0], "-c", "1", "-C", "1"})...)
	cli := d.run(t, "client", "", nil, lineBuffered([]string{"udaddy", "-s", d.addrs[0], "-b", d.addrs[1], "-c", "1", "-C", "1"})...)
	for _, p := range []*proc{srv, cli} {
		if p.wait(deadline); p.killed {
			t.Fatalf("%s hung\n%s", p.name, p.report())
		}
	}
	mustMatch(t, srv, `failure trying to listen: Operation not supported`)
	mustMatch(t, cli, `unable to create QP: Operation not supported`)
}

// TestCmtime: cmtime's 100 connections set up and torn down at once (its
// server never ends by itself), over RoCEv2 and iWARP. Over iWARP its
// client destroys each QP right after rdma_disconnect, before the peer's
// close: the connection must still end (it hung there half the runs).
// The figures go to the log.
func TestCmtime(t *testing.T) {
	needLibrary(t)
	needPrograms(t, "cmtime")
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			d := sharedDaemonOf(t, tr.kind)
			port := cmPort()
			_, cli := d.runCMPair(t, true, []string{"cmtime", "-b", d.addrs[0], "-p", port, "-c", "100"},
				[]string{"cmtime", "-s", d.addrs[0], "-b", d.addrs[1], "-p", port, "-c", "100"})
			mustMatch(t, cli, `(?m)^connect\s*:\s+[\d.]+`, `(?m)^disconnect\s*:\s+[\d.]+`)
			if strings.Contains(cli.out.String(), "RDMA_CM_EVENT_") {
				t.Errorf("a connection failed\n%s", cli.report())
			}
			t.Log(cli.out.String())
		})
	}
}

// perftestRefused is how each transport's client reports perftest's own
// race: its server listens a second time for the data connection after
// the first, and its client connects without retrying; a client faster
// than the server (rdma_cm resolves at once here) finds no listener:
// RoCEv2 gets a REJ with reason 8 (invalid service ID), iWARP a refused
// TCP connection (REJECTED with -ECONNREFUSED, as the kernel's iWARP CM).
var perftestRefused = map[string]string{
	nicUDP: "RDMA_CM_EVENT_REJECTED; error: 8.",
	nicTCP: "RDMA_CM_EVENT_REJECTED; error: -111.",
}

// TestPerftestRdmaCM: perftest with -R: connections through rdma_cm
// rather than its TCP side channel, over RoCEv2 and iWARP (its atomics
// RFC 7306's there).
func TestPerftestRdmaCM(t *testing.T) {
	needLibrary(t)
	for _, tr := range transports {
		for _, c := range []struct {
			prog string
			size int
		}{{"ib_write_bw", 65536}, {"ib_read_bw", 65536}, {"ib_send_bw", 65536}, {"ib_atomic_bw", 8}, {"ib_write_lat", 2}} {
			t.Run(tr.name+"/"+c.prog, func(t *testing.T) {
				needPrograms(t, c.prog)
				d := sharedDaemonOf(t, tr.kind)
				cli := runPerftestRdmaCM(t, d, perftestRefused[tr.kind], c.prog, "-n", "200")
				mustMatch(t, cli, fmt.Sprintf(`(?m)^\s*%d\s+200\s+[\d.]+\s+[\d.]+`, c.size))
			})
		}
	}
}

// runPerftestRdmaCM runs prog -R with args, server on rnic0 and client on
// rnic1, trying again (up to three times) only when the client lost
// perftest's race (refused: how it shows). It returns the client.
func runPerftestRdmaCM(t *testing.T, d *daemon, refused, prog string, args ...string) *proc {
	t.Helper()
	port := cmPort()
	common := append([]string{prog, "-R", "-p", port, "-F"}, args...)
	server := append(append([]string{}, common...), "-d", "rnic0")
	client := append(append([]string{}, common...), "-d", "rnic1", d.addrs[0])
	for try := 1; ; try++ {
		srv, cli, ok := d.tryCMPair(t, false, server, client)
		if ok {
			return cli
		}
		if try == 3 || !strings.Contains(cli.out.String(), refused) {
			t.Fatalf("server/client pair failed\n%s\n%s\n%s", srv.report(), cli.report(), d.p.report())
		}
		t.Logf("try %d: the client overtook the server's second listen (perftest's race); again", try)
	}
}

// The rdma_cm corner tests (tests/cm/cm_corners.c), built with -Wall
// -Wextra -Werror and AddressSanitizer against the system's librdmacm.so
// and run on the ASan build of the drop-in libraries. They are a program
// of their own: the verbs corner tests (tests/*.c) link no librdmacm.
var cmCorners builtOnce

func needCMCorners(t *testing.T) string {
	t.Helper()
	needLibrary(t)
	if _, err := os.Stat("/usr/include/rdma/rdma_cma.h"); err != nil {
		t.Skip("no <rdma/rdma_cma.h> to build the rdma_cm corner tests: apt-get install librdmacm-dev")
	}
	return cmCorners.get(t, func() (string, error) {
		bin := filepath.Join(build.dir, "cm_corners")
		return compile("building the rdma_cm corner tests", bin, false, "gcc", "-std=gnu11", "-g", "-O1", "-Wall", "-Wextra", "-Werror",
			"-fsanitize=address", "-fno-omit-frame-pointer", "-o", bin, "nic/rnicd/dropin/tests/cm/cm_corners.c",
			"-lrdmacm", "-libverbs", "-lpthread")
	})
}

func runCMCorner(t *testing.T, d *daemon, stdin io.Reader, test string) *proc {
	t.Helper()
	bin := needCMCorners(t)
	env := []string{"RNIC_LIBDIR=" + filepath.Join(build.dir, "lib", "asan"), asanOptions(test)}
	return start(t, "cm_corners "+test, env, stdin, build.rnic, "exec", "-S", d.socket, "--", bin, test, d.addrs[0], d.addrs[1])
}

// TestCMCorners: reject with private data, no listener, the IRD/ORD
// parameters against the device's limits, ADDR_ERROR, a
// non-blocking channel with poll(2), 64 connects pending on a listener, a
// channel destroyed under its waiting thread, UD ids (SIDR: rejected,
// accepted, no listener), rdma_bind_addr's port (taken at once, reserved,
// given back), the loopback address (127.0.0.1, ::1) bound and connected
// to, rdma_getaddrinfo as libfabric calls it, private data at its limits,
// TIMEWAIT_EXIT after the CM's timewait.
//
// Over iWARP too, all but the UD one (iWARP has no UD).
func TestCMCorners(t *testing.T) {
	for _, tr := range transports {
		for _, c := range []string{"reject", "nolistener", "params", "addrerror", "nonblock", "backlog", "orphan", "ud",
			"bind", "loopback", "getaddrinfo", "privdata", "timewait"} {
			if c == "ud" && tr.kind == nicTCP {
				continue
			}
			t.Run(tr.name+"/"+c, func(t *testing.T) {
				needCMCorners(t)
				d := sharedDaemonOf(t, tr.kind)
				finish(t, runCMCorner(t, d, nil, c), d.p.report())
			})
		}
	}
}

// TestCMCornersDaemonKilled: the daemon is killed (SIGKILL) while a
// connect waits on an unanswered request: every id gets DEVICE_REMOVAL, a
// route resolution ROUTE_ERROR, and nothing hangs.
func TestCMCornersDaemonKilled(t *testing.T) {
	needCMCorners(t)
	var cleanups []func()
	t.Cleanup(func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	})
	d, err := startDaemon(func(f func()) { cleanups = append(cleanups, f) }, nicUDP)
	if err != nil {
		t.Fatal(err)
	}
	stdin, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	p := runCMCorner(t, d, stdin, "killed")
	stdin.Close()
	deadline := time.After(programTimeout)
	for !strings.Contains(p.out.String(), "ready\n") {
		select {
		case <-p.done:
			t.Fatalf("ended before it was ready\n%s", p.report())
		case <-deadline:
			p.kill()
			t.Fatalf("not ready\n%s", p.report())
		case <-time.After(10 * time.Millisecond):
		}
	}
	d.p.cmd.Process.Signal(syscall.SIGKILL)
	<-d.p.done
	w.Close()
	finish(t, p)
}
