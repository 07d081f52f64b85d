// A completion pushed while an in-process CQ's fired arm is being handled.

package server_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
	"github.com/rnic/rnic/nic/rnicd/server"
	"github.com/rnic/rnic/nic/verbs"
)

// TestCompletionPushedDuringFire: QP a's completion fires the daemon's CQ,
// and while the daemon carries it to the client's ring (the CQ unarmed
// until that is done), QP b, sharing the CQ, completes a WR on its own
// drainer: that push fires nothing. Both completions must reach the ring
// with nothing pushed after them. Before, b's stayed in the daemon's CQ
// until some later completion came (rnic perf --mw, two QPs on one send
// CQ, stalled waiting for a BIND_MW completion one run in a few hundred
// with the CPU contended: the goroutine carrying a's completion had lost
// its CPU for long enough).
func TestCompletionPushedDuringFire(t *testing.T) {
	var b atomic.Pointer[ibv.QP]
	var pushed atomic.Bool
	server.AfterFireMove(t, func(cq ibv.CQ) {
		qp := b.Load()
		if qp == nil || pushed.Swap(true) {
			return
		}
		wr := verbs.SendWR{ID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled}
		if err := (*qp).PostSend(&wr); err != nil {
			t.Error(err)
			return
		}
		// Wait until b's drainer has pushed it into the daemon's CQ.
		for deadline := time.Now().Add(5 * time.Second); nic.CQOf(cq).Len() == 0; time.Sleep(100 * time.Microsecond) {
			if time.Now().After(deadline) {
				t.Error("QP b's completion never reached the daemon's CQ")
				return
			}
		}
	})
	d := rnicdtest.Start(t, rnicdtest.Options{})
	dev, pd, cq := openWithCQ(t, d.Spec(0), 16)
	var qps [2]ibv.QP
	for i := range qps {
		var err error
		if qps[i], err = dev.CreateQP(pd, ibv.QPInit{Type: verbs.QPTypeRC, SendCQ: cq, RecvCQ: cq,
			Cap: verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}}); err != nil {
			t.Fatal(err)
		}
		// In ERR a posted WR completes at once (flushed) on the drainer
		// of its QP.
		if err := qps[i].Modify(&verbs.QPAttr{State: verbs.QPSErr}, verbs.AttrState); err != nil {
			t.Fatal(err)
		}
	}
	b.Store(&qps[1])
	wr := verbs.SendWR{ID: 1, Opcode: verbs.WRSend, Flags: verbs.SendSignaled}
	if err := qps[0].PostSend(&wr); err != nil {
		t.Fatal(err)
	}
	wcs := make([]verbs.WC, 4)
	var ids []uint64
	for deadline := time.Now().Add(5 * time.Second); len(ids) < 2; {
		n := cq.Poll(wcs)
		for _, wc := range wcs[:n] {
			ids = append(ids, wc.WRID)
		}
		if n == 0 && time.Now().After(deadline) {
			t.Fatalf("completions of WRs %v reached the ring, want 1 and 2", ids)
		}
	}
	if !pushed.Load() {
		t.Fatal("QP b's WR was not posted while QP a's completion fired")
	}
}
