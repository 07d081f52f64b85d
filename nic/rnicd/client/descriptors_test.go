package client_test

import (
	"os"
	"testing"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
	"github.com/rnic/rnic/nic/verbs"
)

// countFDs counts this process's open descriptors.
func countFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(ents)
}

// TestRingsHoldNoDescriptors creates QPs through an in-process daemon and
// counts the descriptors they cost the process (daemon and client alike):
// none. The ring memfds are closed once mapped on both sides, and the
// drainers are rung through the session doorbell (one socket per
// session) rather than an eventfd per QP. Before, each QP held 4 (its
// ring memfd and doorbell eventfd on each side), and a daemon serving
// 10,000 QPs ran out of its descriptor limit.
func TestRingsHoldNoDescriptors(t *testing.T) {
	const n = 200
	d := rnicdtest.Start(t, rnicdtest.Options{})
	dev := open(t, d, 0)
	pd, err := dev.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := dev.CreateCQ(64)
	if err != nil {
		t.Fatal(err)
	}
	before := countFDs(t)
	qps := make([]ibv.QP, 0, n)
	for range n {
		qp, err := dev.CreateQP(pd, ibv.QPInit{Type: verbs.QPTypeRC, SendCQ: cq, RecvCQ: cq,
			Cap: verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
		if err != nil {
			t.Fatal(err)
		}
		qps = append(qps, qp)
	}
	grown := countFDs(t) - before
	t.Logf("%d QPs: %d descriptors (%.2f per QP, daemon and client)", n, grown, float64(grown)/n)
	if grown > 0 {
		t.Errorf("%d QPs took %d descriptors, want none", n, grown)
	}
	for _, qp := range qps {
		if err := qp.Destroy(); err != nil {
			t.Fatal(err)
		}
	}
	if left := countFDs(t) - before; left > 0 {
		t.Errorf("%d descriptors left after destroying the QPs", left)
	}
}
