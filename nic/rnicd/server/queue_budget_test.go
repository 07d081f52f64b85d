// The queues of QPs cost the daemon heap whatever is posted (the engines
// allocate them whole): that memory is charged per uid and for the whole
// daemon before the QP exists, so a client cannot make the daemon allocate
// gigabytes with a few huge QPs (8 QPs of 2^20 WRs each way took ~2 GiB).

package server_test

import (
	"runtime"
	"strings"
	"testing"

	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
	"github.com/rnic/rnic/nic/rnicd/server"
	"github.com/rnic/rnic/nic/verbs"
)

// queueClient opens rnic0 with PD 1 and a CQ 2 of cqe entries.
func queueClient(t *testing.T, d *rnicdtest.Daemon) *raw {
	r := dial(t, d.Socket)
	r.expect(proto.OpOpen, &proto.OpenReq{Version: proto.Version, Name: "rnic0"}, proto.StatusOK)
	r.expect(proto.OpAllocPD, &proto.Empty{}, proto.StatusOK)
	r.expect(proto.OpCreateCQOn, &proto.CreateCQOnReq{CQE: 64}, proto.StatusOK)
	return r
}

func TestQueueBytesPerUID(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{Limits: server.Limits{MaxQueueBytesPerUID: 64 << 20}})
	big := verbs.QPCap{MaxSendWR: 1 << 17, MaxRecvWR: 1 << 17, MaxSendSGE: 1, MaxRecvSGE: 1} // ~50 MB
	create := func(r *raw, c verbs.QPCap) (proto.Status, string) {
		st, body := r.request(proto.OpCreateQP, &proto.CreateQPReq{PD: 1, SendCQ: 2, RecvCQ: 2, Type: verbs.QPTypeRC, Cap: c})
		return st, string(body)
	}
	a, b := queueClient(t, d), queueClient(t, d)
	st, body := a.request(proto.OpCreateQP, &proto.CreateQPReq{PD: 1, SendCQ: 2, RecvCQ: 2, Type: verbs.QPTypeRC, Cap: big})
	if st != proto.StatusOK {
		t.Fatalf("first big QP: %v %s", st, body)
	}
	first := decode(t, body, &proto.CreateQPReply{}).QP
	// Another client of the same uid: over the uid's budget.
	st, msg := create(b, big)
	if st != proto.StatusLimit || !strings.Contains(msg, "--max-queue-bytes-per-uid") {
		t.Fatalf("second big QP: %v %q, want the uid's queue budget named", st, msg)
	}
	if st, msg := create(b, verbs.QPCap{MaxSendWR: 128, MaxRecvWR: 128, MaxSendSGE: 1, MaxRecvSGE: 1}); st != proto.StatusOK {
		t.Fatalf("a small QP: %v %s", st, msg)
	}
	// Destroying the big QP gives its bytes back.
	a.expect(proto.OpDestroyQP, &proto.Handle{H: first}, proto.StatusOK)
	if st, msg := create(b, big); st != proto.StatusOK {
		t.Fatalf("big QP after the first was destroyed: %v %s", st, msg)
	}
}

// The charge is not below what the daemon's heap really grows by for a
// QP's queues, or the budget would not bound the heap.
func TestQueueBytesEstimate(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{})
	r := queueClient(t, d)
	c := verbs.QPCap{MaxSendWR: 1 << 16, MaxRecvWR: 1 << 16, MaxSendSGE: 4, MaxRecvSGE: 4, MaxInlineData: 64}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if st, body := r.request(proto.OpCreateQP, &proto.CreateQPReq{PD: 1, SendCQ: 2, RecvCQ: 2, Type: verbs.QPTypeRC, Cap: c}); st != proto.StatusOK {
		t.Fatalf("CREATE_QP: %v %s", st, body)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	charged := int64(server.QueueBytes(c))
	t.Logf("heap grew %d bytes for the QP; charged %d", grew, charged)
	if grew > charged+charged/8 {
		t.Errorf("the heap grew %d bytes for a QP charged %d: the estimate is low", grew, charged)
	}
}
