package perf

import (
	"bytes"
	"net/netip"
	"testing"
)

// TestManyQPsLargeWrites: 100 QPs of 64 KiB WRITEs on kernel UDP
// sockets, which drop what overflows their buffers, with perf's own
// in-flight bound lifted to every QP's whole depth (as a program that
// does not pace itself). Each QP going back N with a whole window used to
// overflow the sockets again until every QP had exhausted retry_cnt
// (RETRY_EXC_ERR within a second); with the requester's congestion
// window (roce/window.go) the run completes.
func TestManyQPsLargeWrites(t *testing.T) {
	var out bytes.Buffer
	cfg := Config{Op: OpWrite, Mode: ModeBW, Size: 64 << 10, QPs: 100, Iters: 200, MTU: 4096, NoRaw: true,
		TxDepth: DefaultTxDepth, Inflight: 100 * DefaultTxDepth,
		ServerAddr: netip.MustParseAddr("127.0.0.62"), Addr: netip.MustParseAddr("127.0.0.63"), Out: &out}
	runEveryOp(t, cfg, &out)
}

// TestThousandQPsLargeWrites: 1,000 QPs of 64 KiB WRITEs, 32 posted on
// each, with the in-flight bound lifted, as an MPI-style program through
// the drop-in library would run them. With only the congestion window each
// QP started with a whole window, so together they overflowed the sockets
// at once and again at every resend, and QPs exhausted retry_cnt
// (RETRY_EXC_ERR within a second or two, in most runs); with the stack's
// budget of unacknowledged bytes (roce/budget.go) the QPs take turns and
// the run completes.
func TestThousandQPsLargeWrites(t *testing.T) {
	var out bytes.Buffer
	qps, iters := 1000, 40
	if raceEnabled || testing.Short() {
		iters = 4
	}
	cfg := Config{Op: OpWrite, Mode: ModeBW, Size: 64 << 10, QPs: qps, Iters: iters, MTU: 4096, NoRaw: true,
		TxDepth: 32, Inflight: qps * 32,
		ServerAddr: netip.MustParseAddr("127.0.0.64"), Addr: netip.MustParseAddr("127.0.0.65"), Out: &out}
	runEveryOp(t, cfg, &out)
}

// runEveryOp runs cfg and fails unless every operation of every QP
// completed with its data intact.
func runEveryOp(t *testing.T, cfg Config, out *bytes.Buffer) {
	t.Helper()
	res, err := Run(testCtx(t), cfg)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !res.Check.OK() {
		t.Errorf("data check: %+v", res.Check)
	}
	if b := res.BW; b == nil || b.Ops != int64(cfg.Iters*cfg.QPs) {
		t.Errorf("bandwidth figures %+v, want %d operations", b, cfg.Iters*cfg.QPs)
	}
}
