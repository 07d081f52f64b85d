// rnicd serving iWARP NICs on TAPs (transport=iwarp): the spec's checks,
// and, as root, two daemons on one bridge whose clients connect through
// their rdma_cm (MPA over each NIC's own TCP, across the bridge).

package main

import (
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rnic/rnic/nic/ibv/ibvtest"
	"github.com/rnic/rnic/nic/verbs"
)

func TestParseArgsTransport(t *testing.T) {
	specs, err := devices([]string{"--tap", "t0", "--ip", "10.0.0.2/24", "--transport", "iwarp",
		"--device", "tap=t1,ip=10.0.0.3/24,transport=roce",
		"--device", "tap=t2,ip=10.0.0.4/24,transport=IWARP",
		"--device", "tap=t3,ip=10.0.0.5/24",
		"--device", "tcp=127.0.0.2,transport=iwarp",
		"--device", "udp=127.0.0.3,transport=roce"})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, false, true, false, false, false} {
		if specs[i].IWARP != want {
			t.Errorf("device %d (%s): IWARP %v, want %v", i, specs[i].Name, specs[i].IWARP, want)
		}
	}
	if specs[4].TCP != netip.MustParseAddr("127.0.0.2") || specs[5].UDP.Addr() != netip.MustParseAddr("127.0.0.3") {
		t.Errorf("tcp/udp specs %+v %+v", specs[4], specs[5])
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--device", "tap=t1,ip=10.0.0.3/24,transport=ib"}, `transport=: "ib" is not a transport (roce or iwarp)`},
		{[]string{"--tap", "t1", "--ip", "10.0.0.3/24", "--transport", "tcp"}, `--transport: "tcp" is not a transport`},
		{[]string{"--device", "udp=127.0.0.2,transport=iwarp"}, "transport=: a NIC on udp= is a RoCEv2 one"},
		{[]string{"--device", "tcp=127.0.0.2,transport=roce"}, "transport=: a NIC on tcp= is an iWARP one"},
		{[]string{"--device", "verbs=rxe0,transport=iwarp"}, "transport= do not apply"},
		{[]string{"--transport", "iwarp"}, "--tap, --udp or --tcp is required"},
		{[]string{"--device", "transport=iwarp"}, "tap=, udp= or tcp= is required"},
	} {
		_, err := devices(c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.args, err, c.want)
		}
	}
}

// TestDaemonsTAPIWARP: two rnicd processes, each with an iWARP NIC on a
// TAP on one bridge; the devices say iWARP/RNIC, and the rdma_cm suite
// runs between clients of the two daemons (TCP, MPA and the FPDUs on the
// bridge, from the NICs' own TCP).
func TestDaemonsTAPIWARP(t *testing.T) {
	requireRoot(t)
	bin := buildRnicd(t)
	ns := newNetns(t)
	var socks [2]string
	var addrs [2]netip.Addr
	var pcaps [2]string
	var daemons [2]*daemonProc
	for i := range daemons {
		socks[i] = filepath.Join(t.TempDir(), "rnicd.sock")
		tap := fmt.Sprintf("ri%d", i)
		addrs[i] = netip.AddrFrom4([4]byte{10, 88, 0, byte(70 + i)})
		pcaps[i] = filepath.Join(t.TempDir(), "iw.pcap")
		pcap := pcaps[i]
		daemons[i] = startDaemon(t, bin, []string{"iw0: iwarp tap " + tap + " netns " + ns + " bridge br0 mac ",
			"rnicd: serving iw0 on " + socks[i]},
			"--socket", socks[i], "--name", "iw0", "--transport", "iwarp", "--tap", tap, "--ip", addrs[i].String()+"/24",
			"--netns", ns, "--bridge", "br0", "--pcap", pcap)
	}
	if a := openDev(t, "iw0@"+socks[0]).Query(); a.Transport != verbs.TransportIWARP || a.NodeType != verbs.NodeRNIC {
		t.Fatalf("transport %v, node type %v; want iWARP, RNIC", a.Transport, a.NodeType)
	}
	ibvtest.RunCM(t, func(t *testing.T) ibvtest.Pair {
		return ibvtest.Pair{A: openDev(t, "iw0@"+socks[0]), B: openDev(t, "iw0@"+socks[1]),
			AddrA: addrs[0], AddrB: addrs[1], IWARP: true}
	})
	for _, d := range daemons {
		d.stop(t)
	}
	// The connections crossed the bridge: each TAP saw the MPA frames.
	for i, p := range pcaps {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte("MPA ID Req Frame")) || !bytes.Contains(b, []byte("MPA ID Rep Frame")) {
			t.Errorf("daemon %d's capture (%d bytes) has no MPA Request and Reply", i, len(b))
		}
	}
}
