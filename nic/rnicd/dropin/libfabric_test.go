package dropin

import (
	"regexp"
	"strconv"
	"testing"
)

// libfabric 1.17's verbs provider, unmodified (fi_info, fi_pingpong), on
// the drop-in libraries. Its datagram domains (NAME-dgram: UD QPs, and RDM
// endpoints over them, ofi_rxd) come from the devices alone. Its MSG
// domains (RC QPs through rdma_cm, and RDM over them, ofi_rxm) come from
// the network interfaces (getifaddrs: up, not loopback) whose address
// rdma_bind_addr binds to a device; a program run by rnic exec has such
// an interface for each NIC only in rnic exec's view of the network, so
// those tests skip without it, saying so.

// fiPingpongRow is a line of fi_pingpong's table for iters messages of
// size (its short form: 4k).
func fiPingpongRow(size string, iters int) string {
	n := strconv.Itoa(iters)
	return `(?m)^` + size + `\s+` + n + `\s+=` + n + `\s+`
}

// needView skips unless programs run by rnic exec on d see an interface
// other than lo with rnic0's address: libfabric's verbs MSG domains come
// from such interfaces.
func (d *daemon) needView(t *testing.T) {
	t.Helper()
	needTool(t, "iproute2", "ip")
	p := d.runOne(t, "ip", "-o", "-4", "addr", "show")
	if !p.ok() {
		t.Fatal(p.report())
	}
	re := regexp.MustCompile(`(?m)^\d+:\s+(\S+)\s+inet\s+` + regexp.QuoteMeta(d.addrs[0]) + `/`)
	if m := re.FindStringSubmatch(p.out.String()); m == nil || m[1] == "lo" {
		t.Skipf("programs run by rnic exec have no network interface with rnic0's address %s (rnic exec's view "+
			"of the network gives one): libfabric's verbs provider finds its MSG domains by such interfaces", d.addrs[0])
	}
}

// TestFiInfoVerbs: fi_info lists the verbs provider's datagram domains of
// both RoCEv2 NICs; with rnic exec's view, the MSG domains of both NICs
// on RoCEv2 and iWARP.
func TestFiInfoVerbs(t *testing.T) {
	needLibrary(t)
	needTool(t, "libfabric-bin", "fi_info")
	t.Run("dgram", func(t *testing.T) {
		d := sharedDaemon(t)
		p := d.runOne(t, "fi_info", "-p", "verbs", "-t", "FI_EP_DGRAM")
		if !p.ok() {
			t.Fatal(p.report())
		}
		mustMatch(t, p, `(?m)^\s+domain: rnic0-dgram$`, `(?m)^\s+domain: rnic1-dgram$`)
	})
	for _, tr := range transports {
		t.Run("msg-"+tr.name, func(t *testing.T) {
			d := sharedDaemonOf(t, tr.kind)
			d.needView(t)
			p := d.runOne(t, "fi_info", "-p", "verbs", "-t", "FI_EP_MSG")
			if !p.ok() {
				t.Fatal(p.report())
			}
			mustMatch(t, p, `(?m)^\s+domain: rnic0$`, `(?m)^\s+domain: rnic1$`)
		})
	}
}

// fiPingpong runs fi_pingpong's server with args and its client toward
// d's rnic0 address (fi_pingpong's own TCP channel), data checked (-c).
func (d *daemon) fiPingpong(t *testing.T, server, client []string) {
	t.Helper()
	d.fiPingpongWith(t, nil, "verbs", false, server, client)
}

// rxmTeardownRace: libfabric 1.17's ofi_rxm (Debian's) may lose a
// connection's last message, fail its last send as flushed or crash at
// teardown when it handles the peer's disconnect before that connection's
// last completions: it closes the endpoint (destroying the QP) first and
// handles them afterwards, on the endpoint it freed. Upstream fixed the
// order in 2026 ("prov/rxm: fix the msg_ep use-after-free at connection
// teardown"). The window is a progress call's, between its empty read of
// the CQ and its read of the CM events, on any device; a busy machine
// stretches it (here 1 run in 10 to 20 of fi_pingpong with both cores
// busy). By then both sides have printed their table: every transfer,
// checked by -c, is done.
const rxmTeardownRace = "libfabric 1.17's ofi_rxm teardown race"

// fiPingpongWith is fiPingpong of provider prov, each side run by prefix
// (env(1) with variables). With rxmRace, a pair that fails after both
// sides printed their whole table (rxmTeardownRace) is run once more;
// failing again fails the test.
func (d *daemon) fiPingpongWith(t *testing.T, prefix []string, prov string, rxmRace bool, server, client []string) {
	t.Helper()
	argv := func(extra ...[]string) []string {
		a := append(append([]string{}, prefix...), "fi_pingpong", "-p", prov, "-c", "-I", "100", "-S", "4096")
		for _, e := range extra {
			a = append(a, e...)
		}
		return a
	}
	row := regexp.MustCompile(fiPingpongRow("4k", 100))
	for attempt := 0; ; attempt++ {
		p := freeTCPPort(t)
		port := strconv.Itoa(p)
		srv, cli := d.tryPairEnv(t, p, nil, argv([]string{"-B", port}, server), nil, argv([]string{"-P", port}, client, []string{d.addrs[0]}))
		if srv.ok() && cli.ok() {
			for _, p := range []*proc{srv, cli} {
				mustMatch(t, p, row.String())
			}
			return
		}
		report := d.pairFailure(srv, cli)
		if !rxmRace || attempt > 0 || !row.MatchString(srv.out.String()) || !row.MatchString(cli.out.String()) {
			t.Fatal(report)
		}
		t.Logf("both sides printed their table, then the pair failed (%s): once more\n%s", rxmTeardownRace, report)
	}
}

// TestFiPingpongRDM: fi_pingpong's RDM endpoint (ofi_rxd over the verbs
// provider's UD datagrams), server on rnic0's datagram domain, client on
// rnic1's, RoCEv2 (iWARP has no UD).
func TestFiPingpongRDM(t *testing.T) {
	needLibrary(t)
	needTool(t, "libfabric-bin", "fi_pingpong")
	d := sharedDaemon(t)
	d.fiPingpong(t, []string{"-e", "rdm", "-d", "rnic0-dgram"}, []string{"-e", "rdm", "-d", "rnic1-dgram"})
}

// TestFiPingpongMsg: fi_pingpong's MSG endpoint (an RC QP through rdma_cm),
// on RoCEv2 and iWARP, in rnic exec's view. Its server binds "localhost"
// (the provider's node when none is given), which binds to no one NIC as
// every NIC is on loopback, and listens on its first MSG domain's
// address, or the one -d names; the client connects to the address the
// server sends it, from that address's NIC (the kernel routes a local
// address so: both ends are on one NIC).
func TestFiPingpongMsg(t *testing.T) {
	needLibrary(t)
	needTool(t, "libfabric-bin", "fi_pingpong")
	for _, tr := range transports {
		for _, dom := range []string{"", "rnic1"} {
			name := tr.name
			if dom != "" {
				name += "-" + dom
			}
			t.Run(name, func(t *testing.T) {
				d := sharedDaemonOf(t, tr.kind)
				d.needView(t)
				server := []string{"-e", "msg"}
				if dom != "" {
					server = append(server, "-d", dom)
				}
				d.fiPingpong(t, server, []string{"-e", "msg"})
			})
		}
	}
}

// TestFiPingpongRxm: fi_pingpong's RDM endpoint over the MSG domains
// (ofi_rxm over verbs RC QPs), on RoCEv2 and iWARP, in rnic exec's view;
// both ends on rnic0's domain, since the client resolves the server's
// address to the NIC that has it. FI_UNIVERSE_SIZE is made small: rxm
// sizes its completion queue for its default universe of 256 peers, more
// entries than max_cqe (32767, rxe's too). A failure at teardown after
// both tables is rxm's own race (rxmTeardownRace): run once more.
func TestFiPingpongRxm(t *testing.T) {
	needLibrary(t)
	needTool(t, "libfabric-bin", "fi_pingpong")
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			d := sharedDaemonOf(t, tr.kind)
			d.needView(t)
			args := []string{"-e", "rdm", "-d", "rnic0"}
			d.fiPingpongWith(t, []string{"env", "FI_UNIVERSE_SIZE=8"}, "verbs;ofi_rxm", true, args, args)
		})
	}
}
