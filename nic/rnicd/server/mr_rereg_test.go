// REREG_MR_WINDOW: an MR over one window of an arena re-registered over
// another keeps its keys, and a peer's RDMA READ through the old rkey
// reads the new window; refusals leave the MR as it was.

package server_test

import (
	"bytes"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
	"github.com/rnic/rnic/nic/rnicd/server"
)

func TestReregMRWindow(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{NICs: 2})
	r := dial(t, d.Socket)
	r.expect(proto.OpOpen, &proto.OpenReq{Version: proto.Version, Name: "rnic0"}, proto.StatusOK)
	_, body := r.request(proto.OpAllocPD, &proto.Empty{})
	pd := decode(t, body, &proto.Handle{}).H
	_, body = r.request(proto.OpAllocPD, &proto.Empty{})
	pd2 := decode(t, body, &proto.Handle{}).H

	const n, iova = 5000, 0x10_0000
	const offA, offB = 1<<30 + 100, 1<<31 + 4096 + 7
	fd := arena(t, 1<<32, true)
	a, b := bytes.Repeat([]byte{0xA1}, n), bytes.Repeat([]byte{0xB2}, n)
	for _, w := range []struct {
		data []byte
		off  int64
	}{{a, offA}, {b, offB}} {
		if _, err := unix.Pwrite(fd, w.data, w.off); err != nil {
			t.Fatal(err)
		}
	}
	rw := uint32(memory.LocalWrite | memory.RemoteRead | memory.RemoteWrite)
	_, body = r.request(proto.OpRegMRWindow, &proto.RegMRWindowReq{PD: pd, Access: rw, Offset: offA, Length: n, IOVA: iova}, fd)
	mr := decode(t, body, &proto.RegMRReply{})
	peer := windowPeer(t, d, r, pd)
	if got := peer.read(t, iova, n, mr.RKey); !bytes.Equal(got, a) {
		t.Fatal("RDMA READ before the rereg: not window A")
	}

	rereg := func(h, flags, p, access uint32, off uint64) *proto.ReregMRWindowReq {
		return &proto.ReregMRWindowReq{MR: h, Flags: flags, PD: p, Access: access, Offset: off, Length: n, IOVA: iova}
	}
	r.expect(proto.OpReregMRWindow, rereg(mr.MR, proto.ReregTranslation, pd, rw, offB), proto.StatusBadMessage) // no memfd
	r.expect(proto.OpReregMRWindow, rereg(mr.MR, 0, pd, rw, 0), proto.StatusBadMessage, fd)                     // a memfd not asked for
	r.expect(proto.OpReregMRWindow, rereg(mr.MR, 2, pd, rw, 0), proto.StatusInvalid)
	r.expect(proto.OpReregMRWindow, rereg(mr.MR+100, 0, pd, rw, 0), proto.StatusBadHandle)
	r.expect(proto.OpReregMRWindow, rereg(pd, 0, pd, rw, 0), proto.StatusBadHandle) // a PD's handle
	r.expect(proto.OpReregMRWindow, rereg(mr.MR, 0, mr.MR, rw, 0), proto.StatusBadHandle)
	r.expect(proto.OpReregMRWindow, rereg(mr.MR, 0, pd, uint32(memory.RemoteWrite), 0), proto.StatusInvalid)
	r.expect(proto.OpReregMRWindow, rereg(mr.MR, proto.ReregTranslation, pd, rw, 1<<33), proto.StatusInvalid, fd) // past the file

	_, body = r.request(proto.OpReregMRWindow, rereg(mr.MR, proto.ReregTranslation, pd, rw, offB), fd)
	got := decode(t, body, &proto.RegMRReply{})
	if got.MR != mr.MR || got.LKey != mr.LKey || got.RKey != mr.RKey || got.Addr != iova || got.Len != n {
		t.Fatalf("rereg reply %+v, want the keys of %+v", got, mr)
	}
	if got := peer.read(t, iova, n, mr.RKey); !bytes.Equal(got, b) {
		t.Fatal("RDMA READ through the old rkey after the rereg: not window B")
	}
	// A PD and access change, no new memory: the keys stay again.
	st, body := r.request(proto.OpReregMRWindow, rereg(mr.MR, 0, pd2, uint32(memory.LocalWrite), 0))
	if st != proto.StatusOK {
		t.Fatalf("rereg of PD and access: %v %q", st, body)
	}
	if got := decode(t, body, &proto.RegMRReply{}); got.RKey != mr.RKey || got.Len != n {
		t.Fatalf("rereg of PD and access: reply %+v", got)
	}
	r.expect(proto.OpDeallocPD, &proto.Handle{H: pd2}, proto.StatusBusy)
	r.expect(proto.OpDeregMR, &proto.Handle{H: mr.MR}, proto.StatusOK)
	r.expect(proto.OpDeallocPD, &proto.Handle{H: pd2}, proto.StatusOK)
}

// TestReregMRWindowAtLimit: a client with as many MRs as it may have can
// still move one to new memory (a re-registration adds no MR), within its
// bytes of registered memory.
func TestReregMRWindowAtLimit(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{Limits: server.Limits{MaxMRs: 1, MaxMRBytes: 3 * 4096}})
	r := dial(t, d.Socket)
	r.expect(proto.OpOpen, &proto.OpenReq{Version: proto.Version, Name: "rnic0"}, proto.StatusOK)
	_, body := r.request(proto.OpAllocPD, &proto.Empty{})
	pd := decode(t, body, &proto.Handle{}).H
	fd := arena(t, 1<<20, true)
	rw := uint32(memory.LocalWrite | memory.RemoteWrite)
	_, body = r.request(proto.OpRegMRWindow, &proto.RegMRWindowReq{PD: pd, Access: rw, Offset: 4096, Length: 100, IOVA: 0x1000}, fd)
	mr := decode(t, body, &proto.RegMRReply{})
	r.expect(proto.OpRegMRWindow, &proto.RegMRWindowReq{PD: pd, Access: rw, Offset: 3 * 4096, Length: 100, IOVA: 0x1000}, proto.StatusLimit, fd)
	move := func(off, n uint64) *proto.ReregMRWindowReq {
		return &proto.ReregMRWindowReq{MR: mr.MR, Flags: proto.ReregTranslation, PD: pd, Access: rw, Offset: off, Length: n, IOVA: 0x1000}
	}
	r.expect(proto.OpReregMRWindow, move(8*4096, 2*4096), proto.StatusOK, fd)       // 2 pages held, the 1 before given back
	r.expect(proto.OpReregMRWindow, move(16*4096, 2*4096+1), proto.StatusLimit, fd) // 2 + 3 pages > 3
	r.expect(proto.OpReregMRWindow, move(16*4096, 4096), proto.StatusOK, fd)
}
