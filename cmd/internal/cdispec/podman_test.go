package cdispec_test

// Rootful podman with the CDI spec rnic cdi generate writes: unmodified
// ibv_devinfo, ibv_rc_pingpong and ib_write_bw in containers given one NIC
// each with --device rnic.dev/nic=NAME, on one rnicd with two UDP NICs.

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rnic/rnic/transport/porttest"
)

// oneNode is a daemon with NICs rnic0 and rnic1 on loopback addresses,
// its spec installed.
func oneNode(t *testing.T) (*env, *daemon) {
	t.Helper()
	e := needPodman(t)
	d := e.startRnicd(t, nil, "", []string{"rnic0", "rnic1"}, loopbackAddrs(2))
	e.installSpecs(t, d)
	return e, d
}

// gidOf is how sysfs and ibv_devinfo print an IPv4 address's GID.
func gidOf(addr string) string {
	var a [4]int
	fmt.Sscanf(addr, "%d.%d.%d.%d", &a[0], &a[1], &a[2], &a[3])
	return fmt.Sprintf("0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x", a[0], a[1], a[2], a[3])
}

// TestPodmanDevinfo: a container given rnic1 sees the daemon through
// ibv_devinfo, and the view rnic exec gives: its uverbs node alone (not
// rnic0's) with rdma_cm, and its sysfs entries, GID included.
func TestPodmanDevinfo(t *testing.T) {
	e, d := oneNode(t)
	out := e.run(t, box{devices: []string{"rnic.dev/nic=rnic1"}}, "ibv_devinfo", "-d", "rnic1")
	for _, want := range []string{"hca_id:\trnic1", "PORT_ACTIVE", "link_layer:\t\tEthernet"} {
		if !strings.Contains(out, want) {
			t.Errorf("ibv_devinfo lacks %q:\n%s", want, out)
		}
	}
	out = e.run(t, box{devices: []string{"rnic.dev/nic=rnic1"}}, "sh", "-c",
		"ls /dev/infiniband; cat /sys/class/infiniband/rnic1/ports/1/gids/0 /sys/class/infiniband_verbs/uverbs1/ibdev; ls /sys/class/infiniband")
	want := "rdma_cm\nuverbs1\n" + gidOf(d.addrs[1]) + "\nrnic1\nrnic0\nrnic1\n"
	if out != want {
		t.Errorf("the container's view:\n%s\nwant\n%s", out, want)
	}
}

// TestPodmanPingpong: ibv_rc_pingpong, server in a container given rnic0,
// client in one given rnic1, their side channel over the host's network.
func TestPodmanPingpong(t *testing.T) {
	e, d := oneNode(t)
	port := freePort(t)
	common := []string{"ibv_rc_pingpong", "-p", port, "-g", "0", "-n", "100", "-s", "4096", "--chk"}
	srv := e.start(t, "server", box{devices: []string{"rnic.dev/nic=rnic0"}, network: "host"}, append(common, "-d", "rnic0")...)
	waitTCPListen(t, srv, os.Getpid(), port)
	cli := e.run(t, box{devices: []string{"rnic.dev/nic=rnic1"}, network: "host"}, append(common, "-d", "rnic1", d.addrs[0])...)
	srvOut := srv.wait(t)
	for _, out := range []string{cli, srvOut} {
		if !regexp.MustCompile(`(?m)^\d+ bytes in [\d.]+ seconds`).MatchString(out) || !strings.Contains(out, "100 iters in") {
			t.Errorf("no 100 iterations reported:\n%s", out)
		}
	}
}

// TestPodmanWriteBW: perftest's ib_write_bw between two containers.
func TestPodmanWriteBW(t *testing.T) {
	e, d := oneNode(t)
	port := freePort(t)
	common := []string{"ib_write_bw", "-p", port, "-x", "0", "-F", "-n", "200"}
	srv := e.start(t, "server", box{devices: []string{"rnic.dev/nic=rnic0"}, network: "host"}, append(common, "-d", "rnic0")...)
	waitTCPListen(t, srv, os.Getpid(), port)
	cli := e.run(t, box{devices: []string{"rnic.dev/nic=rnic1"}, network: "host"}, append(common, "-d", "rnic1", d.addrs[0])...)
	srv.wait(t)
	if !regexp.MustCompile(`(?m)^\s*65536\s+200\s+[\d.]+\s+[\d.]+`).MatchString(cli) {
		t.Errorf("no result row for 65536 bytes, 200 iterations:\n%s", cli)
	}
}

// freePort is a TCP port for a side channel, free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	p, err := porttest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return strconv.Itoa(p)
}
