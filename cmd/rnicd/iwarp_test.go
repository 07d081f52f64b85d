// rnicd serving iWARP NICs on kernel TCP (tcp=ADDR): the spec's checks,
// and two NICs of one rnicd process whose clients connect through their
// rdma_cm (MPA) and see the transport.

package main

import (
	"net/netip"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rnic/rnic/nic/ibv/ibvtest"
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
	"github.com/rnic/rnic/nic/verbs"
)

func TestParseArgsTCP(t *testing.T) {
	specs, err := devices([]string{"--tcp", "127.0.0.7", "--device", "name=iw1,tcp=::1,pcap=x.pcap"})
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 2 || specs[0].Name != "rnic0" || specs[0].TCP != netip.MustParseAddr("127.0.0.7") ||
		specs[1].Name != "iw1" || specs[1].TCP != netip.MustParseAddr("::1") || specs[1].PcapPath != "x.pcap" {
		t.Fatalf("specs %+v", specs)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--device", "tcp=127.0.0.2:5000"}, "is not an address"},
		{[]string{"--device", "tcp=0.0.0.0"}, "cannot be a NIC's address"},
		{[]string{"--device", "tcp=127.0.0.2,mtu=9000"}, "mtu= does not apply"},
		{[]string{"--device", "tcp=127.0.0.2,udp=127.0.0.2"}, "does not apply"},
		{[]string{"--tcp", "127.0.0.2", "--device", "tcp=127.0.0.2"}, "two iWARP NICs on TCP 127.0.0.2"},
	} {
		_, err := devices(c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.args, err, c.want)
		}
	}
}

func TestDaemonIWARP(t *testing.T) {
	bin := buildRnicd(t)
	sock := filepath.Join(t.TempDir(), "rnicd.sock")
	a0, a1 := rnicdtest.LoopbackAddr(), rnicdtest.LoopbackAddr()
	d := startDaemon(t, bin, []string{"iw0: iwarp tcp " + a0.String() + " ready", "iw1: iwarp tcp " + a1.String() + " ready",
		"rnicd: serving iw0, iw1 on " + sock},
		"--name", "iw0", "--tcp", a0.String(), "--device", "name=iw1,tcp="+a1.String(), "--socket", sock)
	if a := openDev(t, "iw0@"+sock).Query(); a.Transport != verbs.TransportIWARP || a.NodeType != verbs.NodeRNIC {
		t.Fatalf("transport %v, node type %v; want iWARP, RNIC", a.Transport, a.NodeType)
	}
	ibvtest.RunCM(t, func(t *testing.T) ibvtest.Pair {
		return ibvtest.Pair{A: openDev(t, "iw0@"+sock), B: openDev(t, "iw1@"+sock), AddrA: a0, AddrB: a1, IWARP: true}
	})
	d.stop(t)
}
