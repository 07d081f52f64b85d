package server_test

import (
	"testing"

	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
)

// A completion channel carries one socket; CQs on it, or on no channel,
// carry none of their own (at most the first ring chunk's memfd); a
// channel with CQs cannot be destroyed, and can once they are gone.
func TestChannelDescriptors(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{})
	r := dial(t, d.Socket)
	r.expect(proto.OpOpen, &proto.OpenReq{Version: proto.Version, Name: "rnic0"}, proto.StatusOK)
	r.expect(proto.OpCreateCQOn, &proto.CreateCQOnReq{CQE: 8}, proto.StatusOK) // maps the first chunk
	r.expect(proto.OpCreateChannel, &proto.Empty{}, proto.StatusOK)
	if r.fds != 1 {
		t.Errorf("CREATE_CHANNEL with %d descriptors, want the channel's socket", r.fds)
	}
	const ncq = 200
	for i := range ncq {
		r.expect(proto.OpCreateCQOn, &proto.CreateCQOnReq{CQE: 8, Channel: 2}, proto.StatusOK)
		if r.fds != 0 {
			t.Fatalf("CQ %d on a channel came with %d descriptors", i, r.fds)
		}
		r.expect(proto.OpCreateCQOn, &proto.CreateCQOnReq{CQE: 8}, proto.StatusOK)
		if r.fds != 0 {
			t.Fatalf("CQ %d without a channel came with %d descriptors", i, r.fds)
		}
	}
	r.expect(proto.OpCreateCQOn, &proto.CreateCQOnReq{CQE: 8, Channel: 99999}, proto.StatusBadHandle)
	r.expect(proto.OpDestroyChannel, &proto.Handle{H: 2}, proto.StatusBusy)
	for i := range ncq { // handles 3, 4, 5, ...: on the channel every other one
		r.expect(proto.OpDestroyCQ, &proto.Handle{H: uint32(3 + 2*i)}, proto.StatusOK)
	}
	r.expect(proto.OpDestroyChannel, &proto.Handle{H: 2}, proto.StatusOK)
}
