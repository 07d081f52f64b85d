// Soak through the daemon: thousands of QPs created, used and destroyed by
// clients, and clients that leave without destroying anything; the
// process (daemon and clients both live in it) comes back to what it held.

package client_test

import (
	"testing"
	"time"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/ibv/ibvtest"
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
	"github.com/rnic/rnic/nic/verbs"
)

func TestSoakDaemon(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{NICs: 2})
	ibvtest.Soak(t, ibvtest.Pair{A: open(t, d, 0), B: open(t, d, 1), AddrA: d.NICs[0].Addr, AddrB: d.NICs[1].Addr}, ibvtest.SoakQPs)
}

// TestSoakClientsLeave: clients that exchange a message and close with
// every object still alive are reaped to the last socket and mapping.
func TestSoakClientsLeave(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{NICs: 2})
	round := func() {
		// Not open(): its cleanup would keep every device reachable.
		a, err := ibv.Open(d.Spec(0))
		if err != nil {
			t.Fatal(err)
		}
		b, err := ibv.Open(d.Spec(1))
		if err != nil {
			t.Fatal(err)
		}
		ea, eb := newEnd(t, a, verbs.QPTypeRC, 1<<16), newEnd(t, b, verbs.QPTypeRC, 1<<16)
		connect(t, ea, eb, nil)
		exchange(t, ea, eb)
		a.Close()
		b.Close()
		// The program's memory, which an exiting process gives up too.
		ea.mem.Close()
		eb.mem.Close()
	}
	for range 8 {
		round()
	}
	base := ibvtest.MeasureUsage()
	clients := max(ibvtest.SoakQPs/16, 100)
	for range clients / 2 {
		round()
	}
	var now ibvtest.Usage
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if now = ibvtest.MeasureUsage(); now.Within(base, ibvtest.Slack) || time.Now().After(deadline) {
			break
		}
	}
	t.Logf("%d clients: before %v; after %v", clients, base, now)
	if !now.Within(base, ibvtest.Slack) {
		t.Errorf("resources did not return to their baseline after %d clients left:\n before %v\n after  %v", clients, base, now)
	}
	if st := d.Server.Stats(); st.ReapedQPs < uint64(clients) {
		t.Errorf("reaped %d QPs, want %d", st.ReapedQPs, clients)
	}
}

// exchange sends one message from a to b and checks it.
func exchange(t *testing.T, a, b *end) {
	t.Helper()
	for i := range 64 {
		a.buf[i] = byte(i * 3)
	}
	if err := b.qp.PostRecv(&verbs.RecvWR{ID: 7, SGL: []verbs.SGE{{Addr: b.mr.Addr(), Length: 64, LKey: b.mr.LKey()}}}); err != nil {
		t.Fatal(err)
	}
	if err := a.qp.PostSend(&verbs.SendWR{ID: 8, Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
		SGL: []verbs.SGE{{Addr: a.mr.Addr(), Length: 64, LKey: a.mr.LKey()}}}); err != nil {
		t.Fatal(err)
	}
	for _, e := range []*end{a, b} {
		if wc := poll(t, e.cq); wc.Status != verbs.WCSuccess {
			t.Fatalf("completion %+v", wc)
		}
	}
	for i := range 64 {
		if b.buf[i] != byte(i*3) {
			t.Fatalf("byte %d: %#x", i, b.buf[i])
		}
	}
}
