package server_test

import (
	"testing"

	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
	"github.com/rnic/rnic/nic/verbs"
)

// The descriptors each version's replies carry: a version 4 client gets
// the session doorbell with OPEN (its memory, its eventfd) and a QP's ring
// memory alone; a version 2 client gets no doorbell with OPEN and an
// eventfd with each QP, as before.
func TestDoorbellByVersion(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{})
	for _, c := range []struct {
		version      uint32
		open, create int
	}{{proto.VersionTransport, 0, 2}, {proto.VersionSessionBell, 2, 1}} {
		r := dial(t, d.Socket)
		r.expect(proto.OpOpen, &proto.OpenReq{Version: c.version, Name: "rnic0"}, proto.StatusOK)
		if r.fds != c.open {
			t.Errorf("version %d: OPEN reply with %d descriptors, want %d", c.version, r.fds, c.open)
		}
		r.expect(proto.OpAllocPD, &proto.Empty{}, proto.StatusOK)
		r.expect(proto.OpCreateCQ, &proto.CreateCQReq{CQE: 8}, proto.StatusOK)
		for range 3 {
			r.expect(proto.OpCreateQP, &proto.CreateQPReq{PD: 1, SendCQ: 2, RecvCQ: 2, Type: verbs.QPTypeRC,
				Cap: verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}}, proto.StatusOK)
			if r.fds != c.create {
				t.Errorf("version %d: CREATE_QP reply with %d descriptors, want %d", c.version, r.fds, c.create)
			}
		}
	}
}
