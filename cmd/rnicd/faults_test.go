package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
	"github.com/rnic/rnic/transport"
)

// TestParseArgsFaults: the first device's --faults and a --device spec's
// fault keys give the same spec, their seed drawn when not given; faults
// on a NIC without frames, and bad fault keys, are refused.
func TestParseArgsFaults(t *testing.T) {
	specs, err := devices([]string{"--udp", "127.0.0.2", "--faults", "loss=1%,reorder=0.25,seed=7",
		"--device", "name=rnic1,udp=127.0.0.3,loss=0.01,reorder=25%,seed=7",
		"--device", "tap=t2,ip=10.0.0.3/24,corrupt=0.001,dir=both",
		"--device", "tap=t3,ip=10.0.0.4/24"})
	if err != nil {
		t.Fatalf("parseArgs: %v", err)
	}
	want := transport.FaultSpec{Faults: transport.Faults{Loss: 0.01, Reorder: 0.25}, Seed: 7, SeedGiven: true}
	for i, s := range specs[:2] {
		if s.Faults == nil || *s.Faults != want {
			t.Errorf("device %d faults %+v, want %+v", i, s.Faults, want)
		}
	}
	if f := specs[2].Faults; f == nil || f.Faults.Corrupt != 0.001 || f.Dir != transport.FaultBoth || !f.SeedGiven {
		t.Errorf("device 2 faults %+v, want corrupt=0.001 both ways with a drawn seed", f)
	}
	if specs[3].Faults != nil {
		t.Errorf("device 3 has faults %+v, none given", specs[3].Faults)
	}
	if got := faultsReady(specs[0]); got != " faults loss=0.01,reorder=0.25,seed=7" {
		t.Errorf("ready line addition %q", got)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--faults", "loss=0.01"}, "--faults applies to the first device"},
		{[]string{"--udp", "127.0.0.2", "--faults", "loss"}, "not key=value"},
		{[]string{"--udp", "127.0.0.2", "--faults", "loss=0.1,mtu=9000"}, "unknown key"},
		{[]string{"--udp", "127.0.0.2", "--faults", "loss=2"}, "outside 0..1"},
		{[]string{"--device", "tcp=127.0.0.2,loss=0.01"}, "faults apply to a NIC on tap= or udp="},
		{[]string{"--device", "verbs=rxe0,loss=0.01"}, "faults apply to a NIC on tap= or udp="},
		{[]string{"--device", "udp=127.0.0.2,seed=3"}, "injects nothing"},
	} {
		_, err := devices(tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error with %q", tc.args, err, tc.want)
		}
	}
}

// TestDaemonsUDPFaults: two rnicd processes on kernel UDP, each with
// seeded loss and duplication on its own output (the soak's set-up): an
// RDMA WRITE between their clients arrives whole, and each daemon's port
// counters (rnic stat's) show the faults it injected beside the
// retransmissions they caused.
func TestDaemonsUDPFaults(t *testing.T) {
	bin := buildRnicd(t)
	var socks [2]string
	var daemons [2]*daemonProc
	var devs [2]ibv.Device
	for i := range daemons {
		socks[i] = filepath.Join(t.TempDir(), "rnicd.sock")
		addr := rnicdtest.LoopbackAddr()
		faults := fmt.Sprintf("loss=0.2,dup=0.1,seed=%d", 11+i)
		daemons[i] = startDaemon(t, bin, []string{"rnic0: udp " + addr.String() + ":4791 mtu 1500 ready faults " + faults,
			"rnicd: serving rnic0 on " + socks[i]}, "--socket", socks[i], "--udp", addr.String(), "--faults", faults)
		devs[i] = openDev(t, "rnic0@"+socks[i])
	}
	rcWrite(t, devs[0], devs[1], 0, 0)
	for i, d := range devs {
		c := map[string]uint64{}
		for _, x := range d.(ibv.Counters).Counters() {
			c[x.Name] = x.Value
		}
		if c["fault_tx_lost"] == 0 || c["fault_tx_duplicated"] == 0 || c["fault_rx_lost"] != 0 {
			t.Errorf("daemon %d: fault counters %v, want tx losses and duplicates and no rx faults", i, c)
		}
		if i == 0 && c["retransmitted_pkts"] == 0 {
			t.Errorf("daemon 0 lost %d frames and retransmitted none", c["fault_tx_lost"])
		}
	}
	for _, d := range daemons {
		d.stop(t)
	}
}
