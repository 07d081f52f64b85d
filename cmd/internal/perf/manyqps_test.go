package perf

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/transport"
)

// TestManyQPsConfig: a test of thousands of QPs resolves with depths that
// fit the shared CQs when they are left at the default, and is refused,
// naming the flag, when a depth given would overflow them.
func TestManyQPsConfig(t *testing.T) {
	for _, c := range []struct {
		cfg               Config
		tx, rx, inflight  int
		sendCQE, recvCQE  int
		wantErr, errMatch string
	}{
		{cfg: Config{QPs: 10000}, tx: 3, rx: 3, inflight: 32, sendCQE: 30001, recvCQE: 10001},
		{cfg: Config{QPs: 10000, Op: OpSend}, tx: 3, rx: 3, inflight: 32, sendCQE: 30001, recvCQE: 30001},
		{cfg: Config{QPs: MaxQPs, MTU: 1024}, tx: 1, rx: 1, inflight: 8, sendCQE: 1<<15 - 1, recvCQE: 1<<15 - 1},
		{cfg: Config{QPs: 1}, tx: DefaultTxDepth, rx: DefaultRxDepth, inflight: DefaultTxDepth, sendCQE: 129, recvCQE: 2},
		{cfg: Config{QPs: 10000, TxDepth: 128}, errMatch: "-q/--qps 10000 × -t/--tx-depth 128 needs a send CQ of 1280001 entries"},
		{cfg: Config{QPs: 10000, Op: OpSend, RxDepth: 512}, errMatch: "-r/--rx-depth 512 needs a receive CQ"},
		{cfg: Config{QPs: MaxQPs + 1}, errMatch: "qps 32767, must be 1..32766"},
		{cfg: Config{Inflight: -1}, errMatch: "inflight -1"},
	} {
		r, err := c.cfg.resolve(context.Background())
		if err == nil {
			err = r.checkLimits(localLimits())
		}
		if c.errMatch != "" {
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.errMatch) {
				t.Errorf("%+v: %v, want ErrConfig saying %q", c.cfg, err, c.errMatch)
			}
			continue
		}
		if err != nil {
			t.Errorf("%+v: %v", c.cfg, err)
			continue
		}
		if r.TxDepth != c.tx || r.RxDepth != c.rx || r.Inflight != c.inflight || r.sendCQE() != c.sendCQE || r.recvCQE() != c.recvCQE {
			t.Errorf("%+v: tx %d rx %d inflight %d, CQs %d and %d; want %d %d %d, %d and %d", c.cfg,
				r.TxDepth, r.RxDepth, r.Inflight, r.sendCQE(), r.recvCQE(), c.tx, c.rx, c.inflight, c.sendCQE, c.recvCQE)
		}
	}
}

// TestFitOutReads: the READ depth of every QP together stays within the
// device's responder resources.
func TestFitOutReads(t *testing.T) {
	a := verbs.DeviceAttr{MaxQPRdAtom: 128, MaxResRdAtom: 0x3f000}
	for _, c := range []struct{ qps, want int }{{1, 128}, {2016, 128}, {2017, 127}, {10000, 25}, {1 << 20, 1}} {
		if got := fitOutReads(a, c.qps); got != c.want || c.qps*got > a.MaxResRdAtom && got > 1 {
			t.Errorf("%d QPs: %d reads each, want %d", c.qps, got, c.want)
		}
	}
}

// TestManyQPsRun runs WRITE, READ and SEND bandwidth over 2,100 QP pairs
// (more than rxe's responder resources allow at 128 READs each) and checks
// that every QP carried its operations and the data arrived.
func TestManyQPsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("thousands of QPs: not in -short")
	}
	const qps, iters = 2100, 2
	for _, op := range []Op{OpWrite, OpRead, OpSend} {
		a, b := transport.NewPipe()
		cfg := Config{Op: op, Mode: ModeBW, QPs: qps, Iters: iters, Size: 4096, Link: b, ServerLink: a, NoRaw: true}
		res, err := Run(testCtx(t), cfg)
		if err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		if !res.Check.OK() {
			t.Errorf("%s: data check %+v", op, res.Check)
		}
		if res.BW == nil || res.BW.QPsDone != qps || res.BW.Ops != qps*iters || len(res.Client) != qps || len(res.Server) != qps {
			t.Errorf("%s: %+v, %d and %d keys; want all %d QPs done", op, res.BW, len(res.Client), len(res.Server), qps)
		}
		if res.ConnectSeconds <= 0 {
			t.Errorf("%s: connect time %v", op, res.ConnectSeconds)
		}
	}
}

// TestPatternsFill: the copied fill is the byte-by-byte pattern, for
// regions shorter and longer than its period and QPs sharing a low byte.
func TestPatternsFill(t *testing.T) {
	p := &patterns{seed: 0x5a}
	for _, c := range []struct{ qp, n int }{{0, 100}, {1, 65536}, {257, 65536}, {3, 200000}, {259, 70000}, {1, 10}} {
		got, want := make([]byte, c.n), make([]byte, c.n)
		p.fill(got, c.qp)
		fillPattern(want, p.seed, c.qp)
		if !bytes.Equal(got, want) {
			t.Errorf("QP %d, %d bytes: the copied pattern differs", c.qp, c.n)
		}
	}
}
