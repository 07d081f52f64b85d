package roce

import (
	"bytes"
	"testing"
	"time"

	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/transport"
)

// READs over a wire that reorders a quarter of the responses by up to a few
// packet times, as RoCEv2 over routed IP (or netem's "delay reorder 25%")
// does. Each gap is an implied NAK (go-back-N, as rxe does); the old burst's
// late responses that arrive while that retry is under way must not each ask
// for the READ again. Before, every straggler at or below the highest PSN
// seen counted as a replay and asked again at once: against Linux rxe, whose
// responder serves every re-request in full, the backlog grew until the
// local ACK timer ran out (RETRY_EXC_ERR).
func TestReadsOverReorderingWire(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		readsOverReorderingWire(t, seed)
	}
}

func readsOverReorderingWire(t *testing.T, seed uint64) {
	o := slowReadOpts()
	o.seed = seed
	o.timeout = 14 // 67 ms, as perftest and rping use
	o.retryCnt = 7
	o.faults = transport.FaultConfig{BtoA: transport.Faults{Reorder: 0.25, ReorderWindow: 400 * time.Microsecond}}
	h := newHarness(t, o)
	a, b := h.a, h.b
	fill(b.buf, 7)
	const size, reads = 64 << 10, 16
	for i := range uint64(reads) {
		off := int(i) * size
		a.post(t, verbs.SendWR{ID: i, Opcode: verbs.WRRDMARead, SGL: []verbs.SGE{a.sge(off, size)}, RemoteAddr: b.va(off), RKey: b.mr.RKey()})
	}
	h.run()
	wcs := a.scq.take()
	if len(wcs) != reads {
		t.Fatalf("%d completions, want %d", len(wcs), reads)
	}
	for _, wc := range wcs {
		if wc.Status != verbs.WCSuccess {
			t.Fatalf("READ %d: %v", wc.WRID, wc.Status)
		}
	}
	if !bytes.Equal(a.buf[:reads*size], b.buf[:reads*size]) {
		t.Fatal("data differs")
	}
	sent, want := b.stack.ctr.Get(ReadResponsesSent), uint64(reads*size/1024)
	timeouts := a.stack.ctr.Get(RetransmitTimeouts)
	t.Logf("seed %d: implied_nak=%d read_responses_sent=%d (%d without replays) timeouts=%d", seed, a.stack.ctr.Get(ImpliedNak), sent, want, timeouts)
	if timeouts != 0 {
		t.Errorf("seed %d: %d local ACK timeouts on a wire that loses nothing", seed, timeouts)
	}
}
