package client_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
	"github.com/rnic/rnic/nic/verbs"
)

// CQs cost no descriptor (their events come through the session's one
// completion channel), and events still arrive per CQ: many CQs armed,
// fired in random order (a flushed WR on a QP in ERR), each CQ's Notify
// sees its event once, and none fires for a CQ that got nothing. Before
// protocol 6 each CQ held an eventfd on each side.
func TestCQEventsThroughChannel(t *testing.T) {
	const n = 100
	d := rnicdtest.Start(t, rnicdtest.Options{})
	dev := open(t, d, 0)
	pd, err := dev.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	first, err := dev.CreateCQ(4) // the session's channel comes with the first CQ
	if err != nil {
		t.Fatal(err)
	}
	defer first.Destroy()
	before := countFDs(t)
	cqs := make([]ibv.CQ, n)
	for i := range cqs {
		if cqs[i], err = dev.CreateCQ(4); err != nil {
			t.Fatal(err)
		}
	}
	if grown := countFDs(t) - before; grown > 0 {
		t.Errorf("%d CQs took %d descriptors, want none", n, grown)
	}
	qps := make([]ibv.QP, n)
	for i, cq := range cqs {
		qp, err := dev.CreateQP(pd, ibv.QPInit{Type: verbs.QPTypeRC, SendCQ: cq, RecvCQ: cq,
			Cap: verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
		if err != nil {
			t.Fatal(err)
		}
		if err := qp.Modify(&verbs.QPAttr{State: verbs.QPSErr}, verbs.AttrState); err != nil {
			t.Fatal(err)
		}
		qps[i] = qp
		if err := cq.ReqNotify(i%2 == 1); err != nil { // a flushed WR fires a solicited-only arm too
			t.Fatal(err)
		}
	}
	order := rand.Perm(n)
	fired := order[:n/2]
	for _, i := range fired {
		if err := qps[i].PostRecv(&verbs.RecvWR{ID: uint64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, i := range fired {
		if !waitNotify(cqs[i], 5*time.Second) {
			t.Fatalf("CQ %d: no event within 5s", i)
		}
	}
	for _, i := range fired {
		if waitNotify(cqs[i], 10*time.Millisecond) {
			t.Errorf("CQ %d: a second event for one arm", i)
		}
	}
	for _, i := range order[n/2:] {
		if waitNotify(cqs[i], 0) {
			t.Errorf("CQ %d: an event without a completion", i)
		}
	}
	for i := range qps {
		qps[i].Destroy()
		cqs[i].Destroy()
	}
	if _, ok := <-cqs[0].Notify(); ok {
		t.Error("Notify of a destroyed CQ not closed")
	}
}
