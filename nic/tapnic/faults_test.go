package tapnic_test

import (
	"bytes"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/rnic/rnic/nic/tapnic"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/tap/taptest"
	"github.com/rnic/rnic/transport"
)

// TestFaultsAcrossTAPs: two NICs on one bridge, one losing, duplicating
// and reordering what it sends, the other losing both ways: RDMA WRITE and
// READ of 64 KiB arrive whole, the NICs count what they injected and what
// their engines retransmitted, and each tells its log the faults with
// their seed at Open and what they did at Close.
func TestFaultsAcrossTAPs(t *testing.T) {
	tn := taptest.New(t, 94)
	specs := []string{"loss=0.1,dup=0.1,reorder=0.2,seed=5", "loss=0.05,seed=6,dir=both"} // as String writes them
	var logs [2]strings.Builder
	var nics [2]*tapnic.NIC
	for i, s := range specs {
		fs, err := transport.ParseFaultSpec(s)
		if err != nil {
			t.Fatal(err)
		}
		n, err := tapnic.Open(tapnic.Config{Name: []string{"rnica", "rnicb"}[i], TAP: []string{"tf-a", "tf-b"}[i],
			Netns: tn.Name, Bridge: tn.Bridge, Prefixes: []netip.Prefix{tn.Addr4(2 + i)}, Faults: &fs, FaultLog: &logs[i]})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.Close() })
		nics[i] = n
	}
	x, y := pair(t, nics[0], nics[1], tn.Addr4(2).Addr(), tn.Addr4(3).Addr(), 10, 7)
	rng := rand.New(rand.NewPCG(94, 1))
	for i := range x.buf[:32<<10] {
		x.buf[i] = byte(rng.Uint32())
	}
	for i := range 4 {
		if wc := post(t, x, verbs.SendWR{ID: uint64(i), Opcode: verbs.WRRDMAWrite, SGL: sge(x, 0, 32<<10),
			RemoteAddr: y.mr.Addr(), RKey: y.mr.RKey()}, 20*time.Second); wc.Status != verbs.WCSuccess {
			t.Fatalf("WRITE %d: %v", i, wc.Status)
		}
	}
	if !bytes.Equal(x.buf[:32<<10], y.buf[:32<<10]) {
		t.Fatal("WRITE: data differs")
	}
	if wc := post(t, x, verbs.SendWR{ID: 9, Opcode: verbs.WRRDMARead, SGL: sge(x, 32<<10, 32<<10),
		RemoteAddr: y.mr.Addr(), RKey: y.mr.RKey()}, 20*time.Second); wc.Status != verbs.WCSuccess {
		t.Fatalf("READ: %v", wc.Status)
	}
	if !bytes.Equal(x.buf[:32<<10], x.buf[32<<10:64<<10]) {
		t.Fatal("READ: data differs")
	}

	counters := func(n *tapnic.NIC) map[string]uint64 {
		m := map[string]uint64{}
		for _, c := range append(n.FaultCounters(), n.PortCounters()...) {
			m[c.Name] = c.Value
		}
		return m
	}
	a, b := counters(nics[0]), counters(nics[1])
	if a["fault_tx_lost"] == 0 || a["fault_tx_duplicated"] == 0 || a["fault_tx_reordered"] == 0 || a["fault_rx_lost"] != 0 {
		t.Errorf("rnica (tx faults) counts %v", a)
	}
	if b["fault_rx_lost"] == 0 || a["retransmitted_pkts"] == 0 {
		t.Errorf("rnicb (faults both ways) counts rx lost %d; rnica retransmitted %d", b["fault_rx_lost"], a["retransmitted_pkts"])
	}
	for i, n := range nics {
		n.Close()
		log := logs[i].String()
		if !strings.Contains(log, "faults on TAP "+[]string{"tf-a", "tf-b"}[i]+": "+specs[i]) ||
			!strings.Contains(log, "fault_tx_lost ") {
			t.Errorf("NIC %d's fault log:\n%s", i, log)
		}
	}
}
