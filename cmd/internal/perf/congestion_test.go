package perf

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/rnic/rnic/transport"
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

// TestModeratedCompletionsAreNotAStall: with CQ moderation only every
// CQMod-th WR of a QP completes, so a bandwidth loop over many QPs sees
// its first completion only after every QP moved CQMod messages: here 20
// QPs × 100 × 64 KiB = 131 MB, far more than stallTimeout (shortened
// for the test) allows at any speed this machine has. The loop must wait
// for the bytes in flight, not for one message, before it calls the
// peer gone (under make test with both cores busy, the 100-QP test
// above was failed as stalled while it was moving data).
func TestModeratedCompletionsAreNotAStall(t *testing.T) {
	defer func(d time.Duration) { stallTimeout = d }(stallTimeout)
	stallTimeout = 20 * time.Millisecond
	a, b := transport.NewPipe()
	var out bytes.Buffer
	cfg := Config{Op: OpWrite, Mode: ModeBW, Size: 64 << 10, QPs: 20, Iters: 100, CQMod: 100, MTU: 4096,
		TxDepth: 100, Inflight: 20 * 100, NoRaw: true, Link: b, ServerLink: a, Out: &out}
	runEveryOp(t, cfg, &out)
}

// TestStallBound: the stall bound grows with the bytes that may move
// before the awaited completion, without overflowing for huge ones.
func TestStallBound(t *testing.T) {
	for _, c := range []struct {
		bytes int64
		want  time.Duration
	}{
		{0, stallTimeout},
		{stallRate, stallTimeout + time.Second},
		{stallRate / 2, stallTimeout + time.Second/2},
		{1 << 40, stallTimeout + (1<<40)/stallRate*time.Second},
	} {
		if got := stallFor(c.bytes); got != c.want {
			t.Errorf("stallFor(%d) = %v, want %v", c.bytes, got, c.want)
		}
	}
	cfg := Config{Size: 64 << 10, QPs: 100, CQMod: 100, Inflight: 12800, Iters: 200}
	if got, want := cfg.bytesBeforeCompletion(), int64(100*100*64<<10); got != want {
		t.Errorf("100 QPs at CQMod 100: %d bytes before a completion, want %d", got, want)
	}
	cfg = Config{Size: 64 << 10, QPs: 1000, CQMod: 32, Inflight: 32000, Iters: 4}
	if got, want := cfg.bytesBeforeCompletion(), int64(4000*64<<10); got != want {
		t.Errorf("1000 QPs of 4 WRs: %d bytes before a completion, want %d (the whole run)", got, want)
	}
}
