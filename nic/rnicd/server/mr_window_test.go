// REG_MR_WINDOW: an MR over a window of a huge sparse memfd (the drop-in
// library's arena), checked for its refusals and end to end: a peer's RDMA
// READ gets exactly the window's bytes and its RDMA WRITE lands exactly
// there in the file.

package server_test

import (
	"bytes"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
	"github.com/rnic/rnic/nic/verbs"
)

// arena makes a sparse memfd of size bytes, sealed against shrinking if
// sealed.
func arena(t *testing.T, size int64, sealed bool) int {
	t.Helper()
	fd, err := unix.MemfdCreate("test-arena", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Ftruncate(fd, size); err != nil {
		t.Fatal(err)
	}
	if sealed {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK); err != nil {
			t.Fatal(err)
		}
	}
	return fd
}

func decode[M proto.Message](t *testing.T, body []byte, m M) M {
	t.Helper()
	r := proto.NewReader(body)
	m.Decode(r)
	if err := r.Done(); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestRegMRWindow(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{NICs: 2})
	r := dial(t, d.Socket)
	r.expect(proto.OpOpen, &proto.OpenReq{Version: proto.Version, Name: "rnic0"}, proto.StatusOK)
	_, body := r.request(proto.OpAllocPD, &proto.Empty{})
	pd := decode(t, body, &proto.Handle{}).H

	const size = 1 << 40 // mostly holes, as an arena is
	const off, n = 1<<39 + 3*4096 + 100, 10000
	const iova = 0x7000_0000_0064
	fd := arena(t, size, true)
	want := make([]byte, n)
	for i := range want {
		want[i] = byte(i*7 + 3)
	}
	if _, err := unix.Pwrite(fd, want, off); err != nil {
		t.Fatal(err)
	}
	access := uint32(memory.LocalWrite | memory.RemoteRead | memory.RemoteWrite)
	req := func(o, l uint64) *proto.RegMRWindowReq {
		return &proto.RegMRWindowReq{PD: pd, Access: access, Offset: o, Length: l, IOVA: iova}
	}
	r.expect(proto.OpRegMRWindow, req(off, n), proto.StatusBadMessage) // no memfd
	r.expect(proto.OpRegMRWindow, req(off, n), proto.StatusInvalid, arena(t, size, false))
	r.expect(proto.OpRegMRWindow, req(size-100, 200), proto.StatusInvalid, fd)
	r.expect(proto.OpRegMRWindow, req(off, 0), proto.StatusInvalid, fd)
	r.expect(proto.OpRegMRWindow, req(1<<63, 1<<63), proto.StatusInvalid, fd)
	_, body = r.request(proto.OpRegMRWindow, req(off, n), fd)
	mr := decode(t, body, &proto.RegMRReply{})
	if mr.Addr != iova || mr.Len != n {
		t.Fatalf("MR at %#x, %d bytes; want %#x, %d", mr.Addr, mr.Len, uint64(iova), n)
	}

	peer := windowPeer(t, d, r, pd)
	got := peer.read(t, iova, n, mr.RKey)
	if !bytes.Equal(got, want) {
		t.Fatalf("RDMA READ of the window: got % x..., want % x...", got[:16], want[:16])
	}
	peer.write(t, iova+5000, bytes.Repeat([]byte{0xAB}, 100), mr.RKey)
	file := make([]byte, n+2)
	if _, err := unix.Pread(fd, file, off-1); err != nil {
		t.Fatal(err)
	}
	copy(want[5000:5100], bytes.Repeat([]byte{0xAB}, 100))
	if file[0] != 0 || file[n+1] != 0 || !bytes.Equal(file[1:n+1], want) {
		t.Fatalf("after RDMA WRITE the file holds something else than the window with the written bytes")
	}
}

// peer is an RC QP on rnic1 (the Go client) connected to a QP of the raw
// client on rnic0, with a buffer of its own.
type peer struct {
	qp  ibv.QP
	cq  ibv.CQ
	buf []byte
	mr  ibv.MR
}

func windowPeer(t *testing.T, d *rnicdtest.Daemon, r *raw, pd uint32) *peer {
	t.Helper()
	dev, err := ibv.Open(d.Spec(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	p := &peer{}
	ppd, err := dev.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	b, err := dev.AllocBuffer(1 << 14)
	if err != nil {
		t.Fatal(err)
	}
	p.buf = b.Bytes()
	if p.mr, err = dev.RegMR(ppd, p.buf, memory.LocalWrite); err != nil {
		t.Fatal(err)
	}
	if p.cq, err = dev.CreateCQ(8); err != nil {
		t.Fatal(err)
	}
	qcap := verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}
	if p.qp, err = dev.CreateQP(ppd, ibv.QPInit{Type: verbs.QPTypeRC, SendCQ: p.cq, RecvCQ: p.cq, Cap: qcap}); err != nil {
		t.Fatal(err)
	}
	// The raw side: a CQ and a QP that only responds.
	cq := decode(t, r.requestFDs(proto.OpCreateCQOn, &proto.CreateCQOnReq{CQE: 8}), &proto.CreateCQOnReply{}).CQ
	rq := decode(t, r.requestFDs(proto.OpCreateQP, &proto.CreateQPReq{PD: pd, SendCQ: cq, RecvCQ: cq, Type: verbs.QPTypeRC, Cap: qcap}),
		&proto.CreateQPReply{})
	g0, g1 := d.Devices[0].GIDs()[0], d.Devices[1].GIDs()[0]
	for _, step := range []struct {
		a    verbs.QPAttr
		mask verbs.QPAttrMask
	}{
		{verbs.QPAttr{State: verbs.QPSInit, PortNum: 1, AccessFlags: memory.LocalWrite | memory.RemoteRead | memory.RemoteWrite},
			verbs.AttrState | verbs.AttrPKeyIndex | verbs.AttrPort | verbs.AttrAccessFlags},
		{verbs.QPAttr{State: verbs.QPSRTR, PathMTU: verbs.MTU1024, RQPSN: 100, MaxDestRdAtomic: 1, MinRNRTimer: 1},
			verbs.AttrState | verbs.AttrAV | verbs.AttrPathMTU | verbs.AttrDestQPN | verbs.AttrRQPSN | verbs.AttrMaxDestRdAtomic | verbs.AttrMinRNRTimer},
		{verbs.QPAttr{State: verbs.QPSRTS, SQPSN: 100, Timeout: 14, RetryCnt: 7, RNRRetry: 7, MaxRdAtomic: 1},
			verbs.AttrState | verbs.AttrSQPSN | verbs.AttrTimeout | verbs.AttrRetryCnt | verbs.AttrRNRRetry | verbs.AttrMaxQPRdAtomic},
	} {
		mine, theirs := step.a, step.a
		mine.AV = verbs.AddressVector{DGID: g0, HopLimit: 64, PortNum: 1}
		mine.DestQPN = rq.QPN
		theirs.AV = verbs.AddressVector{DGID: g1, HopLimit: 64, PortNum: 1}
		theirs.DestQPN = p.qp.QPN()
		if err := p.qp.Modify(&mine, step.mask); err != nil {
			t.Fatalf("peer QP to %v: %v", mine.State, err)
		}
		r.expect(proto.OpModifyQP, &proto.ModifyQPReq{QP: rq.QP, Mask: step.mask, Attr: theirs}, proto.StatusOK)
	}
	return p
}

// requestFDs makes a request whose reply carries descriptors (closed
// here) and returns the reply's body; it fails the test on an error reply.
func (r *raw) requestFDs(op proto.Op, m proto.Message) []byte {
	r.t.Helper()
	r.seq++
	r.send(proto.AppendMessage(nil, proto.Header{Op: op, Kind: proto.KindRequest, Seq: r.seq}, m))
	buf := make([]byte, proto.MaxMessage)
	oob := make([]byte, unix.CmsgSpace(proto.MaxFDs*4))
	r.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, oobn, _, _, err := r.c.ReadMsgUnix(buf, oob)
	if err != nil {
		r.t.Fatalf("%v: no reply: %v", op, err)
	}
	var fds []int
	msgs, _ := unix.ParseSocketControlMessage(oob[:oobn])
	for i := range msgs {
		f, _ := unix.ParseUnixRights(&msgs[i])
		fds = append(fds, f...)
	}
	for _, fd := range fds {
		unix.Close(fd)
	}
	h, body, err := proto.DecodeMessage(buf[:n], len(fds))
	if err != nil || h.Seq != r.seq || h.Status != proto.StatusOK {
		r.t.Fatalf("%v: reply %+v: %v", op, h, err)
	}
	return body
}

func (p *peer) post(t *testing.T, op verbs.WROpcode, raddr uint64, n int, rkey uint32) {
	t.Helper()
	err := p.qp.PostSend(&verbs.SendWR{ID: 1, Opcode: op, Flags: verbs.SendSignaled, RemoteAddr: raddr, RKey: rkey,
		SGL: []verbs.SGE{{Addr: p.mr.Addr(), Length: uint32(n), LKey: p.mr.LKey()}}})
	if err != nil {
		t.Fatal(err)
	}
	wc := make([]verbs.WC, 1)
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if p.cq.Poll(wc) == 1 {
			if wc[0].Status != verbs.WCSuccess {
				t.Fatalf("%v: %v", op, wc[0].Status)
			}
			return
		}
	}
	t.Fatalf("%v: no completion", op)
}

func (p *peer) read(t *testing.T, raddr uint64, n int, rkey uint32) []byte {
	p.post(t, verbs.WRRDMARead, raddr, n, rkey)
	return append([]byte(nil), p.buf[:n]...)
}

func (p *peer) write(t *testing.T, raddr uint64, b []byte, rkey uint32) {
	copy(p.buf, b)
	p.post(t, verbs.WRRDMAWrite, raddr, len(b), rkey)
}
