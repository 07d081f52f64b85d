package perf

// iWARP's part of the soak: perf runs over iWARP (both sides in
// this process, each QP a TCP connection with its goroutines and timers)
// leave nothing behind.

import (
	"bytes"
	"testing"
	"time"

	"github.com/rnic/rnic/nic/ibv/ibvtest"
)

func TestIWARPRunsLeaveNothing(t *testing.T) {
	noSettle(t)
	run := func() {
		t.Helper()
		var out bytes.Buffer
		cfg := Config{IWARP: true, Op: OpWrite, Mode: ModeBW, Size: 4096, QPs: 4, Iters: 100, NoRaw: true, Out: &out}
		if _, err := Run(testCtx(t), cfg); err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
	}
	run()
	base := ibvtest.MeasureUsage()
	const runs = 16
	for range runs {
		run()
	}
	var now ibvtest.Usage
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if now = ibvtest.MeasureUsage(); now.Within(base, ibvtest.Slack) || time.Now().After(deadline) {
			break
		}
	}
	t.Logf("%d iWARP runs of 4 QPs: before %v; after %v", runs, base, now)
	if !now.Within(base, ibvtest.Slack) {
		t.Errorf("resources did not return to their baseline:\n before %v\n after  %v", base, now)
	}
}
