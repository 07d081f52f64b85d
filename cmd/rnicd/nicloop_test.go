package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
	"github.com/rnic/rnic/roce/wire"
	"github.com/rnic/rnic/transport/pcap"
)

// loopRun is what one run of TestDaemonLoopbackAsKernel saw: each NIC's
// capture, summarized frame by frame, and its port counters.
type loopRun struct {
	frames   [2][]string
	counters [2]map[string]uint64
}

// runLoopWrites starts an rnicd with two UDP NICs (each with a capture),
// plus args, and RDMA WRITEs sizes one at a time from a client of the
// first NIC to one of the second, each waited for and checked; it stops
// the daemon and reads the captures.
func runLoopWrites(t *testing.T, bin string, sizes []int, args ...string) loopRun {
	t.Helper()
	dir := t.TempDir()
	sock := filepath.Join(dir, "rnicd.sock")
	addrs := [2]string{rnicdtest.LoopbackAddr().String(), rnicdtest.LoopbackAddr().String()}
	caps := [2]string{filepath.Join(dir, "rnic0.pcap"), filepath.Join(dir, "rnic1.pcap")}
	args = append([]string{"--socket", sock, "--udp", addrs[0], "--pcap", caps[0],
		"--device", fmt.Sprintf("name=rnic1,udp=%s,pcap=%s", addrs[1], caps[1])}, args...)
	d := startDaemon(t, bin, []string{"rnic0: udp " + addrs[0], "rnic1: udp " + addrs[1], "rnicd: serving rnic0, rnic1 on " + sock}, args...)
	devs := [2]ibv.Device{openDev(t, "rnic0@"+sock), openDev(t, "rnic1@"+sock)}
	x, y := rcConnect(t, devs[0], devs[1], 0, 0)
	for _, n := range sizes {
		x.write(t, y, n)
	}
	var run loopRun
	for i, dev := range devs {
		run.counters[i] = map[string]uint64{}
		for _, c := range dev.(ibv.Counters).Counters() {
			run.counters[i][c.Name] = c.Value
		}
	}
	d.stop(t)
	for i, path := range caps {
		frames, err := pcap.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range frames {
			run.frames[i] = append(run.frames[i], summarize(f.Data, addrs))
		}
	}
	return run
}

// summarize describes a captured frame by what does not change from run
// to run: which NIC sent it to which, its IP TOS and TTL, opcode, PSN,
// AETH, payload and whether its ICRC holds (QPNs, keys, addresses and
// the UDP source port that follows the QPN are drawn afresh each run).
func summarize(b []byte, addrs [2]string) string {
	var f wire.Frame
	if err := f.Decode(b, wire.UDPPort); err != nil {
		return fmt.Sprintf("undecodable %d bytes: %v", len(b), err)
	}
	who := func(a string) string {
		for i, x := range addrs {
			if x == a {
				return fmt.Sprintf("nic%d", i)
			}
		}
		return a
	}
	ip := f.IP()
	p := &f.Packet
	aeth := ""
	if p.Info().Has(wire.HdrAETH) {
		aeth = fmt.Sprintf(" aeth %#x msn %d", uint8(p.AETH().Syndrome()), p.AETH().MSN())
	}
	return fmt.Sprintf("%s>%s tos %d ttl %d %v psn %d%s payload %x icrc %v", who(f.SrcAddr().String()), who(f.DstAddr().String()),
		ip[1], ip[8], p.Opcode(), p.BTH().PSN(), aeth, p.Payload(), f.VerifyICRC())
}

// TestDaemonLoopbackAsKernel: between two UDP NICs of one rnicd, frames
// are handed over in memory (the default) or through kernel sockets
// (--no-loopback); the same WRITEs, one at a time so that each run
// makes the same frames, give both NICs the same captures frame for
// frame (timestamps aside) and the same port counters, and the data
// arrives whole.
func TestDaemonLoopbackAsKernel(t *testing.T) {
	bin := buildRnicd(t)
	sizes := []int{1, 8, 100, 1024, 1500, 4096, 5000, 65536}
	looped := runLoopWrites(t, bin, sizes)
	kernel := runLoopWrites(t, bin, sizes, "--no-loopback")
	for i := range 2 {
		l, k := looped.frames[i], kernel.frames[i]
		if len(l) == 0 || len(l) != len(k) {
			t.Errorf("rnic%d captured %d frames looped, %d through the kernel", i, len(l), len(k))
		}
		for j := range min(len(l), len(k)) {
			if l[j] != k[j] {
				t.Errorf("rnic%d frame %d:\nlooped %s\nkernel %s", i, j, l[j], k[j])
				break
			}
		}
		for name, v := range kernel.counters[i] {
			if looped.counters[i][name] != v {
				t.Errorf("rnic%d counter %s: %d looped, %d through the kernel", i, name, looped.counters[i][name], v)
			}
		}
		if looped.counters[i]["sent_pkts"] == 0 || len(looped.counters[i]) != len(kernel.counters[i]) {
			t.Errorf("rnic%d counters looped %v, through the kernel %v", i, looped.counters[i], kernel.counters[i])
		}
	}
}

// TestDaemonLoopbackFaults: frames looped between two NICs of one rnicd
// still pass the first NIC's fault point: its seeded losses and
// duplicates show in its counters, the retransmissions they cause in
// its engine's, and the data arrives whole.
func TestDaemonLoopbackFaults(t *testing.T) {
	bin := buildRnicd(t)
	run := runLoopWrites(t, bin, []int{65536, 65536, 65536}, "--faults", "loss=0.2,dup=0.1,seed=5")
	c := run.counters[0]
	if c["fault_tx_lost"] == 0 || c["fault_tx_duplicated"] == 0 || c["retransmitted_pkts"] == 0 {
		t.Errorf("rnic0 counters %v: want faults injected and retransmissions", c)
	}
	for _, f := range run.frames[0] {
		if strings.Contains(f, "undecodable") {
			t.Errorf("rnic0 captured %s", f)
		}
	}
	t.Logf("rnic0: %d frames captured, %d lost on the way, %d retransmitted", len(run.frames[0]), c["fault_tx_lost"], c["retransmitted_pkts"])
}
