// RESIZE_CQ: its refusals, and a CQ resized up and down that goes on
// being a CQ of the session (the drop-in library's corner test 'verbs'
// and rdma-core's test_resize_cq check the completions it keeps).

package server_test

import (
	"testing"

	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
)

func TestResizeCQ(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{})
	r := dial(t, d.Socket)
	r.expect(proto.OpOpen, &proto.OpenReq{Version: proto.Version, Name: "rnic0"}, proto.StatusOK)
	cq := decode(t, r.requestFDs(proto.OpCreateCQOn, &proto.CreateCQOnReq{CQE: 4}), &proto.CreateCQOnReply{}).CQ

	r.expect(proto.OpResizeCQ, &proto.ResizeCQReq{CQ: cq, CQE: 0}, proto.StatusInvalid)
	r.expect(proto.OpResizeCQ, &proto.ResizeCQReq{CQ: cq, CQE: proto.MaxRingSlots + 1}, proto.StatusInvalid)
	r.expect(proto.OpResizeCQ, &proto.ResizeCQReq{CQ: cq + 100, CQE: 8}, proto.StatusBadHandle)
	for _, cqe := range []uint32{1, 100, 3} {
		got := decode(t, r.requestFDs(proto.OpResizeCQ, &proto.ResizeCQReq{CQ: cq, CQE: cqe}), &proto.CreateCQOnReply{})
		if got.CQ != cq || got.Ring.Cap != cqe || got.Ring.Slots != proto.RingSlots(cqe) {
			t.Fatalf("resize to %d: reply %+v", cqe, got)
		}
	}
	r.expect(proto.OpDestroyCQ, &proto.Handle{H: cq}, proto.StatusOK)
	r.expect(proto.OpResizeCQ, &proto.ResizeCQReq{CQ: cq, CQE: 8}, proto.StatusBadHandle)
}
