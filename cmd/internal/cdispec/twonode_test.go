package cdispec_test

// Two nodes on one machine: two network namespaces joined by a bridge,
// each with its own rnicd (UDP mode) on its own address and its own CDI
// spec; a container in each node's namespace (podman --network ns:PATH)
// runs one end of ib_write_bw, ib_write_lat and rping. A capture on the
// bridge decodes (every ICRC good) and passes the tshark oracle.

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rnic/rnic/roce/decode"
	"github.com/rnic/rnic/tap/taptest"
	"github.com/rnic/rnic/transport/tsharktest"
)

// node is one node's network namespace and daemon.
type node struct {
	netns string // ip netns name
	addr  string
	nic   string
	d     *daemon
}

// box is a container in the node's namespace given its NIC.
func (n *node) box(env ...string) box {
	return box{devices: []string{"rnic.dev/nic=" + n.nic}, network: "ns:/run/netns/" + n.netns, env: env}
}

// addNode makes a namespace with eth0 (address i of the bridge's subnet)
// on the bridge and starts its rnicd there.
func addNode(t *testing.T, e *env, br *taptest.Net, i int, nic string) *node {
	t.Helper()
	var b [4]byte
	rand.Read(b[:])
	n := &node{netns: "rnic-node-" + hex.EncodeToString(b[:]), addr: br.Addr4(i).Addr().String(), nic: nic}
	ip(t, "netns", "add", n.netns)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", n.netns).Run() })
	port := fmt.Sprintf("n%d-%s", i, hex.EncodeToString(b[:2]))
	ip(t, "-n", br.Name, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", n.netns)
	ip(t, "-n", br.Name, "link", "set", port, "master", br.Bridge, "up")
	ip(t, "-n", n.netns, "addr", "add", br.Addr4(i).String(), "dev", "eth0")
	ip(t, "-n", n.netns, "link", "set", "eth0", "up")
	ip(t, "-n", n.netns, "link", "set", "lo", "up")
	// Checksums filled in by the sender, not left to an offload the
	// bridge's capture would show unfinished.
	if err := txChecksumOff(n.netns, "eth0"); err != nil {
		t.Fatal(err)
	}
	n.d = e.startRnicd(t, []string{"ip", "netns", "exec", n.netns}, "", []string{nic}, []string{n.addr})
	return n
}

func ip(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// capture runs dumpcap on the bridge, RoCEv2 frames only (the programs'
// TCP side channels end as their authors chose, a reset included, which
// is not the oracle's business), until the returned function stops it and
// gives the capture's path.
func capture(t *testing.T, br *taptest.Net, dir string) func() string {
	t.Helper()
	path := filepath.Join(dir, "bridge.pcap")
	c := exec.Command("ip", "netns", "exec", br.Name, "dumpcap", "-i", br.Bridge, "-f", "udp port 4791", "-P", "-w", path)
	c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p := startProc(t, "dumpcap", c)
	waitOutput(t, p, "Capturing on")
	return func() string {
		time.Sleep(200 * time.Millisecond) // the last frames reach the file
		c.Process.Signal(syscall.SIGINT)
		p.wait(t)
		return path
	}
}

func TestPodmanTwoNodes(t *testing.T) {
	e := needPodman(t)
	taptest.Require(t)
	if _, err := exec.LookPath("dumpcap"); err != nil {
		t.Skip("dumpcap is not installed: apt-get install tshark")
	}
	br := taptest.New(t, 83)
	a := addNode(t, e, br, 2, "rnic0")
	b := addNode(t, e, br, 3, "rnic1")
	e.installSpecs(t, a.d, b.d)
	stop := capture(t, br, t.TempDir())

	// Each container sees its NIC on its node's interface.
	out := e.run(t, a.box(), "sh", "-c", "ls /sys/class/infiniband/rnic0/device/net; cat /sys/class/infiniband/rnic0/ports/1/gid_attrs/ndevs/0")
	if out != "eth0\neth0\n" {
		t.Errorf("node a's view of rnic0's interface: %q, want eth0 twice", out)
	}
	for _, prog := range []struct {
		name string
		args []string
		row  string
	}{
		{"ib_write_bw", []string{"-n", "200"}, `(?m)^\s*65536\s+200\s+[\d.]+\s+[\d.]+`},
		{"ib_write_lat", []string{"-n", "100"}, `(?m)^\s*2\s+100\s+[\d.]+`},
	} {
		port := freePort(t)
		common := append([]string{prog.name, "-p", port, "-x", "0", "-F"}, prog.args...)
		srv := e.start(t, prog.name+" server", a.box(), append(common, "-d", a.nic)...)
		waitTCPListen(t, srv, a.d.p.cmd.Process.Pid, port)
		cli := e.run(t, b.box(), append(common, "-d", b.nic, a.addr)...)
		srv.wait(t)
		if !regexp.MustCompile(prog.row).MatchString(cli) {
			t.Errorf("%s: no result row:\n%s", prog.name, cli)
		}
	}
	port := freePort(t)
	srv := e.start(t, "rping server", a.box("RNIC_CM_TRACE=1"), "rping", "-s", "-v", "-C", "10", "-a", a.addr, "-p", port)
	waitOutput(t, srv, cmTraceListening)
	cli := e.run(t, b.box(), "rping", "-c", "-v", "-C", "10", "-a", a.addr, "-p", port)
	srvOut := srv.wait(t)
	if !strings.Contains(cli, "ping data: rdma-ping-9: ") || !strings.Contains(srvOut, "server ping data: rdma-ping-9: ") {
		t.Errorf("rping: not 10 pings\nclient:\n%s\nserver:\n%s", cli, srvOut)
	}

	pcap := stop()
	var dec strings.Builder
	sum, err := decode.Run(&dec, []string{pcap}, decode.Options{})
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	// ib_write_bw alone is 200 WRITEs of 64 KiB, at least 11 frames each.
	if sum.ICRCBad != 0 || sum.Unknown != 0 || sum.RoCE < 2200 {
		t.Errorf("the bridge's capture: %s", sum.Line())
	}
	tsharktest.Check(t, pcap, tsharktest.Options{})
}
