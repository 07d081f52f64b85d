package conform

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/rnic/rnic/transport/udp"
)

// TestAckTimeoutLateReader: the tester's receive loop is held up on the
// DUT's first SEND for longer than the ACK-timeout case's early margin,
// and is on time for the retransmission. The case times both by the
// kernel's receive timestamps, so it still measures the DUT's timer and
// passes; timed when the frames were handed over, it would see the
// retransmission early by the hold and FAIL.
func TestAckTimeoutLateReader(t *testing.T) {
	d, cfg := startSelfTest(t, SelfOptions{})
	ep, ok := d.Port.ep.(*udp.Endpoint)
	if !ok {
		t.Fatalf("the self-test's tester port is a %T, not a udp endpoint", d.Port.ep)
	}
	const hold = 5 * time.Millisecond
	var armed atomic.Bool
	ep.SetReceiver(func(b []byte) {
		if armed.Swap(false) {
			time.Sleep(hold)
		}
		d.Port.arrive(b)
	})
	cases := Cases(RoCE, "=9.7.6.1.3/ack-timeout")
	if len(cases) != 1 {
		t.Fatalf("found %d ack-timeout cases", len(cases))
	}
	for range 3 {
		armed.Store(true)
		res := RunCase(cfg, cases[0], false)
		if res.Verdict != Pass {
			t.Fatalf("%s: %s [%s]", res.Verdict, res.Detail, res.Evidence)
		}
		if armed.Load() {
			t.Fatal("no DUT frame reached the delayed receiver")
		}
		t.Logf("%s", res.Evidence)
	}
}
