// CQ events: an armed CQ signals its next completion once (ReqNotify,
// Notify: ibv_req_notify_cq, ibv_get_cq_event), and one armed for
// solicited completions ignores the others.

package ibvtest

import (
	"testing"
	"time"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
)

// waitNotify waits for cq's event.
func waitNotify(t *testing.T, cq ibv.CQ, what string) {
	t.Helper()
	select {
	case <-cq.Notify():
	case <-time.After(waitTimeout):
		t.Fatalf("%s: no CQ event within %v", what, waitTimeout)
	}
}

// noNotify checks that cq has no event pending.
func noNotify(t *testing.T, cq ibv.CQ, what string) {
	t.Helper()
	select {
	case <-cq.Notify():
		t.Fatalf("%s: unexpected CQ event", what)
	default:
	}
}

// pollWait polls cq, without arming it, until a completion comes.
func pollWait(t *testing.T, cq ibv.CQ) verbs.WC {
	t.Helper()
	var wc [1]verbs.WC
	for deadline := time.Now().Add(waitTimeout); cq.Poll(wc[:]) == 0; {
		if time.Now().After(deadline) {
			t.Fatalf("no completion within %v", waitTimeout)
		}
		time.Sleep(100 * time.Microsecond)
	}
	return wc[0]
}

func testNotify(t *testing.T, p Pair) {
	c := newRC(t, p, verbs.QPCap{})
	a, b := c.a, c.b
	send := func(id uint64, flags verbs.SendFlags) {
		t.Helper()
		b.postRecv(c.qb, id, dstOff, 64)
		a.postSend(c.qa, &verbs.SendWR{ID: id, Opcode: verbs.WRSend, Flags: verbs.SendSignaled | flags, SGL: []verbs.SGE{a.sge(srcOff, 32)}})
		checkWC(t, "send", waitOne(t, a.scq), id, verbs.WCSuccess, verbs.WCSend)
	}

	// Armed: the next completion signals, and is there to poll.
	if err := b.rcq.ReqNotify(false); err != nil {
		t.Fatalf("ReqNotify: %v", err)
	}
	send(1, 0)
	waitNotify(t, b.rcq, "a receive on an armed CQ")
	var wc [1]verbs.WC
	if b.rcq.Poll(wc[:]) != 1 {
		t.Fatal("the CQ signaled, but Poll found no completion")
	}
	checkWC(t, "receive", wc[0], 1, verbs.WCSuccess, verbs.WCRecv)

	// Not armed again: the next completion does not signal.
	send(2, 0)
	checkWC(t, "receive", pollWait(t, b.rcq), 2, verbs.WCSuccess, verbs.WCRecv)
	noNotify(t, b.rcq, "a completion on a CQ not armed again")

	// Armed for solicited completions: an unsolicited receive does not
	// signal, a solicited one does.
	if err := b.rcq.ReqNotify(true); err != nil {
		t.Fatalf("ReqNotify(solicited): %v", err)
	}
	send(3, 0)
	checkWC(t, "receive", pollWait(t, b.rcq), 3, verbs.WCSuccess, verbs.WCRecv)
	noNotify(t, b.rcq, "an unsolicited receive on a CQ armed for solicited ones")
	send(4, verbs.SendSolicited)
	waitNotify(t, b.rcq, "a solicited receive")
	if b.rcq.Poll(wc[:]) != 1 {
		t.Fatal("the CQ signaled, but Poll found no completion")
	}
	checkWC(t, "solicited receive", wc[0], 4, verbs.WCSuccess, verbs.WCRecv)
	if err := b.rcq.Err(); err != nil {
		t.Fatalf("CQ error: %v", err)
	}
}
