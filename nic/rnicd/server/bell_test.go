package server_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
	"github.com/rnic/rnic/nic/verbs"
)

// The descriptors a session's replies carry: the session doorbell with
// OPEN (its memory, its socket), and with a QP nothing once its ring
// chunk was sent (no doorbell descriptor per object).
func TestDoorbellDescriptors(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{})
	r := dial(t, d.Socket)
	r.expect(proto.OpOpen, &proto.OpenReq{Version: proto.Version, Name: "rnic0"}, proto.StatusOK)
	if r.fds != 2 {
		t.Errorf("OPEN reply with %d descriptors, want 2", r.fds)
	}
	r.expect(proto.OpAllocPD, &proto.Empty{}, proto.StatusOK)
	r.expect(proto.OpCreateCQOn, &proto.CreateCQOnReq{CQE: 8}, proto.StatusOK) // maps the first chunk
	for range 3 {
		r.expect(proto.OpCreateQP, &proto.CreateQPReq{PD: 1, SendCQ: 2, RecvCQ: 2, Type: verbs.QPTypeRC,
			Cap: verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}}, proto.StatusOK)
		if r.fds != 0 {
			t.Errorf("CREATE_QP reply with %d descriptors, want none", r.fds)
		}
	}
}

// The daemon speaks one protocol version: OPEN of any other is refused
// with StatusVersion and a message naming both, and the connection can
// still open with the right one.
func TestOpenRefusesOtherVersions(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{})
	r := dial(t, d.Socket)
	for _, v := range []uint32{0, 1, proto.Version - 1, proto.Version + 1} {
		msg := r.expect(proto.OpOpen, &proto.OpenReq{Version: v, Name: "rnic0"}, proto.StatusVersion)
		if !strings.Contains(msg, fmt.Sprintf("version %d", v)) || !strings.Contains(msg, fmt.Sprint(proto.Version)) {
			t.Errorf("OPEN of version %d refused with %q: want both versions named", v, msg)
		}
	}
	r.expect(proto.OpOpen, &proto.OpenReq{Version: proto.Version, Name: "rnic0"}, proto.StatusOK)
}
