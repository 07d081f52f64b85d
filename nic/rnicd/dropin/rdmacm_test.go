package dropin

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The rdma_cm programs of rdmacm-utils and perftest -R, unmodified, on
// the drop-in librdmacm.so.1: server on rnic0, client on rnic1 of the
// shared daemon (rdma_cm ports are the daemon's CM's, so each test takes
// a random one).

// cmPort is a random rdma_cm port (the daemon's CM port space, not TCP's).
func cmPort() string { return strconv.Itoa(20000 + rand.IntN(30000)) }

// cmTraceListening is the line RNIC_CM_TRACE=1 makes the library print
// once rdma_listen succeeded: no socket shows that an rdma_cm server is
// ready, so the tests wait for it.
const cmTraceListening = "rnic rdmacm: listening on port "

// startCMServer starts argv through rnic exec with the library's trace on
// and waits until it listens.
func (d *daemon) startCMServer(t *testing.T, deadline <-chan time.Time, argv ...string) *proc {
	t.Helper()
	srv := start(t, "server", []string{"RNIC_CM_TRACE=1"}, nil, append([]string{build.rnic, "exec", "-S", d.socket, "--"}, argv...)...)
	for !strings.Contains(srv.out.String(), cmTraceListening) {
		select {
		case <-srv.done:
			t.Fatalf("the server ended before listening\n%s", srv.report())
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
	deadline := time.After(programTimeout)
	srv = d.startCMServer(t, deadline, server...)
	cli = d.run(t, "client", "", nil, client...)
	cli.wait(deadline)
	if endless {
		srv.kill()
		if !cli.ok() {
			t.Fatalf("client failed\n%s\n%s\n%s", cli.report(), srv.report(), d.p.report())
		}
		return srv, cli
	}
	if !cli.ok() {
		srv.wait(time.After(2 * time.Second))
	}
	srv.wait(deadline)
	if !srv.ok() || !cli.ok() {
		t.Fatalf("server/client pair failed\n%s\n%s\n%s", srv.report(), cli.report(), d.p.report())
	}
	return srv, cli
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
			mustMatch(t, cli, `(?m)^ping data: rdma-ping-99: `, `(?m)DISCONNECT EVENT`)
			mustMatch(t, srv, `(?m)^server ping data: rdma-ping-99: `)
		})
	}
}

// TestUcmatose: ucmatose, several connections at once, each sending
// messages both ways, then disconnecting.
func TestUcmatose(t *testing.T) {
	needLibrary(t)
	needPrograms(t, "ucmatose")
	d := sharedDaemon(t)
	port := cmPort()
	srv, cli := d.runCMPair(t, false,
		[]string{"ucmatose", "-p", port, "-c", "8", "-C", "20"},
		[]string{"ucmatose", "-s", d.addrs[0], "-b", d.addrs[1], "-p", port, "-c", "8", "-C", "20"})
	for _, p := range []*proc{srv, cli} {
		mustMatch(t, p, `(?m)^data transfers complete$`, `(?m)^return status 0$`)
	}
}

// TestRdmaServerClient: rdma_server / rdma_client, the synchronous API
// (no event channel: rdma_create_ep, rdma_get_request, rdma_connect that
// return once done) and the <rdma/rdma_verbs.h> inlines.
func TestRdmaServerClient(t *testing.T) {
	needLibrary(t)
	needPrograms(t, "rdma_server", "rdma_client")
	d := sharedDaemon(t)
	port := cmPort()
	srv, cli := d.runCMPair(t, false, []string{"rdma_server", "-p", port},
		[]string{"rdma_client", "-s", d.addrs[0], "-p", port})
	mustMatch(t, srv, `(?m)^rdma_server: end 0$`)
	mustMatch(t, cli, `(?m)^rdma_client: end 0$`)
}

// TestCmtime: cmtime's 100 connections set up and torn down at once (its
// server never ends by itself). The figures go to the log.
func TestCmtime(t *testing.T) {
	needLibrary(t)
	needPrograms(t, "cmtime")
	d := sharedDaemon(t)
	port := cmPort()
	_, cli := d.runCMPair(t, true, []string{"cmtime", "-b", d.addrs[0], "-p", port, "-c", "100"},
		[]string{"cmtime", "-s", d.addrs[0], "-b", d.addrs[1], "-p", port, "-c", "100"})
	mustMatch(t, cli, `(?m)^connect\s*:\s+[\d.]+`, `(?m)^disconnect\s*:\s+[\d.]+`)
	if strings.Contains(cli.out.String(), "RDMA_CM_EVENT_") {
		t.Errorf("a connection failed\n%s", cli.report())
	}
	t.Log(cli.out.String())
}

// TestPerftestRdmaCM: perftest with -R: connections through rdma_cm
// rather than its TCP side channel.
func TestPerftestRdmaCM(t *testing.T) {
	needLibrary(t)
	for _, c := range []struct {
		prog string
		size int
	}{{"ib_write_bw", 65536}, {"ib_read_bw", 65536}, {"ib_send_bw", 65536}, {"ib_write_lat", 2}} {
		t.Run(c.prog, func(t *testing.T) {
			needPrograms(t, c.prog)
			d := sharedDaemon(t)
			port := cmPort()
			common := []string{c.prog, "-R", "-p", port, "-n", "200", "-F"}
			_, cli := d.runCMPair(t, false, append(append([]string{}, common...), "-d", "rnic0"),
				append(append([]string{}, common...), "-d", "rnic1", d.addrs[0]))
			mustMatch(t, cli, fmt.Sprintf(`(?m)^\s*%d\s+200\s+[\d.]+\s+[\d.]+`, c.size))
		})
	}
}
