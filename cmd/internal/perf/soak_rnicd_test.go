package perf

// The soak through rnicd: short perf runs, one after another,
// through one daemon. Daemon and clients live in this process, so what it
// holds after the runs (descriptors, mappings, goroutines, heap) is what
// they leave behind: nothing beyond the slack.

import (
	"bytes"
	"testing"
	"time"

	"github.com/rnic/rnic/nic/ibv/ibvtest"
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
)

func TestRunsThroughRnicdLeaveNothing(t *testing.T) {
	noSettle(t)
	d := rnicdtest.Start(t, rnicdtest.Options{MTU: 9000})
	run := func(cm bool) {
		t.Helper()
		var out bytes.Buffer
		cfg := Config{Op: OpWrite, Mode: ModeBW, Size: 4096, QPs: 4, Iters: 100, IBDev: d.Spec(0).String(), Out: &out, RDMACM: cm}
		if _, err := Run(testCtx(t), cfg); err != nil {
			t.Fatalf("rdma_cm %v: %v\n%s", cm, err, out.String())
		}
	}
	for _, cm := range []bool{false, true} {
		run(cm)
	}
	base := ibvtest.MeasureUsage()
	// rdma_cm runs leave CM IDs in TimeWait for seconds: they must not
	// hold the QPs (about 0.3 MiB each) meanwhile.
	const runs = 24
	for i := range runs {
		run(i%2 == 1)
	}
	var now ibvtest.Usage
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if now = ibvtest.MeasureUsage(); now.Within(base, ibvtest.Slack) || time.Now().After(deadline) {
			break
		}
	}
	t.Logf("%d runs of 4 QPs, half through rdma_cm: before %v; after %v", runs, base, now)
	if !now.Within(base, ibvtest.Slack) {
		t.Errorf("resources did not return to their baseline:\n before %v\n after  %v", base, now)
	}
}
