package perf

import (
	"bytes"
	"net/netip"
	"testing"
)

// TestManyQPsLargeWrites: 100 QPs of 64 KiB WRITEs on kernel UDP
// sockets, which drop what overflows their buffers. Each QP going back N
// with a whole window used to overflow them again until every QP had
// exhausted retry_cnt (RETRY_EXC_ERR within a second); with the
// requester's congestion window (roce/window.go) the run completes.
func TestManyQPsLargeWrites(t *testing.T) {
	var out bytes.Buffer
	cfg := Config{Op: OpWrite, Mode: ModeBW, Size: 64 << 10, QPs: 100, Iters: 200, MTU: 4096, NoRaw: true,
		ServerAddr: netip.MustParseAddr("127.0.0.62"), Addr: netip.MustParseAddr("127.0.0.63"), Out: &out}
	res, err := Run(testCtx(t), cfg)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	checkOps(t, cfg, res)
}

// TestThousandsOfQPs: more QPs than perf once allowed (1,024), their
// depths left to perf: the CQs must hold every QP's send WRs, so the
// depth shrinks to fit (2,000 × 16 of the default 128).
func TestThousandsOfQPs(t *testing.T) {
	var out bytes.Buffer
	cfg := Config{Op: OpWrite, Mode: ModeBW, Size: 4096, QPs: 2000, Iters: 4, MTU: 4096, NoRaw: true,
		ServerAddr: netip.MustParseAddr("127.0.0.64"), Addr: netip.MustParseAddr("127.0.0.65"), Out: &out}
	res, err := Run(testCtx(t), cfg)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	checkOps(t, cfg, res)
	if want := depthFor(DefaultTxDepth, 2000); want != 16 {
		t.Errorf("depth for 2,000 QPs %d, want 16", want)
	}
}

// checkOps checks that every QP did all its operations, with the data
// check passed.
func checkOps(t *testing.T, cfg Config, res *Result) {
	t.Helper()
	if !res.Check.OK() {
		t.Errorf("data check: %+v", res.Check)
	}
	if b := res.BW; b == nil || b.Ops != int64(cfg.Iters*cfg.QPs) || b.AvgMBps <= 0 {
		t.Errorf("bandwidth figures %+v, want %d operations", b, cfg.Iters*cfg.QPs)
	}
}
