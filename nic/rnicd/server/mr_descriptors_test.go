// An MR costs the daemon a mapping, not a descriptor: a client registering
// one small memfd thousands of times used to take one dup'd descriptor per
// MR and run the daemon out of descriptors for everyone (a red-team
// finding: 19,985 REG_MRs stopped rnicd).

package server_test

import (
	"testing"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
)

func TestMRsHoldNoDescriptor(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{})
	r := dial(t, d.Socket)
	r.expect(proto.OpOpen, &proto.OpenReq{Version: proto.Version, Name: "rnic0"}, proto.StatusOK)
	_, body := r.request(proto.OpAllocPD, &proto.Empty{})
	pd := decode(t, body, &proto.Handle{}).H
	fd := arena(t, 1<<20, true)
	access := uint32(memory.LocalWrite | memory.RemoteRead)
	// Warm up (the session's first MR may create lasting state), then
	// count.
	r.request(proto.OpRegMR, &proto.RegMRReq{PD: pd, Access: access, FileSize: 1 << 20, Length: 4096, IOVA: 0x1000}, fd)
	r.request(proto.OpRegMRWindow, &proto.RegMRWindowReq{PD: pd, Access: access, Offset: 0, Length: 4096, IOVA: 0x1000}, fd)
	before := openFDs(t)
	const n = 200
	for i := range n {
		iova := uint64(0x100000 + i*4096)
		if st, msg := r.request(proto.OpRegMR, &proto.RegMRReq{PD: pd, Access: access, FileSize: 1 << 20, Offset: uint64(i) * 4096 % (1 << 20), Length: 4096, IOVA: iova}, fd); st != proto.StatusOK {
			t.Fatalf("REG_MR %d: %v %s", i, st, msg)
		}
		if st, msg := r.request(proto.OpRegMRWindow, &proto.RegMRWindowReq{PD: pd, Access: access, Offset: uint64(i) * 4096 % (1 << 20), Length: 4096, IOVA: iova}, fd); st != proto.StatusOK {
			t.Fatalf("REG_MR_WINDOW %d: %v %s", i, st, msg)
		}
	}
	if after := openFDs(t); after-before > 10 {
		t.Errorf("%d MRs took %d descriptors in the daemon (%d before, %d after)", 2*n, after-before, before, after)
	}
}
