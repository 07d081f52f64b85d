// UD with address handles, and shared receive queues, through the daemon.

package client_test

import (
	"bytes"
	"testing"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
	"github.com/rnic/rnic/nic/verbs"
)

func toRTSUD(t *testing.T, e *end, qkey uint32) {
	t.Helper()
	if err := e.qp.Modify(&verbs.QPAttr{State: verbs.QPSInit, PortNum: 1, QKey: qkey},
		verbs.AttrState|verbs.AttrPKeyIndex|verbs.AttrPort|verbs.AttrQKey); err != nil {
		t.Fatal(err)
	}
	if err := e.qp.Modify(&verbs.QPAttr{State: verbs.QPSRTR}, verbs.AttrState); err != nil {
		t.Fatal(err)
	}
	if err := e.qp.Modify(&verbs.QPAttr{State: verbs.QPSRTS, SQPSN: 1}, verbs.AttrState|verbs.AttrSQPSN); err != nil {
		t.Fatal(err)
	}
}

func TestUD(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{})
	a := newEnd(t, open(t, d, 0), verbs.QPTypeUD, 1<<14)
	b := newEnd(t, open(t, d, 0), verbs.QPTypeUD, 1<<14)
	const qkey = 0x1234
	toRTSUD(t, a, qkey)
	toRTSUD(t, b, qkey)
	ah, err := a.dev.CreateAH(a.pd, b.gid())
	if err != nil {
		t.Fatal(err)
	}
	if !ah.AV().DGID.Is4In6() {
		t.Errorf("AH DGID %v: the NIC normalises an IPv4 GID to its mapped form", ah.AV().DGID)
	}
	msg := []byte("a datagram through rnicd")
	if err := b.qp.PostRecv(&verbs.RecvWR{ID: 1, SGL: sge(b, 0, 40+len(msg))}); err != nil {
		t.Fatal(err)
	}
	copy(a.buf, msg)
	wr := &verbs.SendWR{ID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGL: sge(a, 0, len(msg)),
		AH: ah.AV(), RemoteQPN: b.qp.QPN(), RemoteQKey: qkey}
	if err := a.qp.PostSend(wr); err != nil {
		t.Fatal(err)
	}
	expectWC(t, a.cq, verbs.WCSuccess, verbs.WCSend)
	wc := expectWC(t, b.cq, verbs.WCSuccess, verbs.WCRecv)
	if wc.SrcQP != a.qp.QPN() || wc.Flags&verbs.WCFlagGRH == 0 || wc.ByteLen != uint32(40+len(msg)) {
		t.Errorf("UD receive completion %+v, want src QP %#x, GRH, %d bytes", wc, a.qp.QPN(), 40+len(msg))
	}
	if !bytes.Equal(b.buf[40:40+len(msg)], msg) {
		t.Errorf("received %q", b.buf[40:40+len(msg)])
	}

	// An AV that is no AH of this device, and a destroyed AH, are refused
	// at post time.
	bogus := *ah.AV()
	wr.AH = &bogus
	if err := a.qp.PostSend(wr); err == nil {
		t.Error("UD send with an AV that is no AH's: posted")
	}
	if err := ah.Destroy(); err != nil {
		t.Fatal(err)
	}
	wr.AH = ah.AV()
	if err := a.qp.PostSend(wr); err == nil {
		t.Error("UD send with a destroyed AH: posted")
	}
}

func TestSRQ(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{})
	a := newEnd(t, open(t, d, 0), verbs.QPTypeRC, 1<<14)
	devB := open(t, d, 0)
	b := &end{dev: devB}
	var err error
	if b.pd, err = devB.AllocPD(); err != nil {
		t.Fatal(err)
	}
	buf, _ := devB.AllocBuffer(1 << 14)
	b.buf = buf.Bytes()
	if b.mr, err = devB.RegMR(b.pd, b.buf, allAccess); err != nil {
		t.Fatal(err)
	}
	b.cq, _ = devB.CreateCQ(64)
	srq, err := devB.CreateSRQ(b.pd, 16, 2)
	if err != nil {
		t.Fatal(err)
	}
	if b.qp, err = devB.CreateQP(b.pd, ibv.QPInit{Type: verbs.QPTypeRC, SendCQ: b.cq, RecvCQ: b.cq, SRQ: srq, Cap: defaultCap}); err != nil {
		t.Fatal(err)
	}
	if err := b.qp.PostRecv(&verbs.RecvWR{ID: 1}); err == nil {
		t.Error("PostRecv on a QP that receives from an SRQ: no error")
	}
	connect(t, a, b, nil)
	for i := range 4 {
		if err := srq.PostRecv(&verbs.RecvWR{ID: uint64(100 + i), SGL: sge(b, 1024*i, 1024)}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 4 {
		a.buf[i] = byte('A' + i)
		if err := a.qp.PostSend(&verbs.SendWR{ID: uint64(i), Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGL: sge(a, i, 1)}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 4 {
		expectWC(t, a.cq, verbs.WCSuccess, verbs.WCSend)
		wc := expectWC(t, b.cq, verbs.WCSuccess, verbs.WCRecv)
		if wc.WRID != uint64(100+i) || b.buf[1024*i] != byte('A'+i) {
			t.Errorf("SRQ receive %d: wr %d, byte %q", i, wc.WRID, b.buf[1024*i])
		}
	}
	if err := srq.Destroy(); err == nil {
		t.Error("destroying an SRQ a QP uses: no error")
	}
	if err := b.qp.Destroy(); err != nil {
		t.Fatal(err)
	}
	if err := srq.Destroy(); err != nil {
		t.Errorf("destroy SRQ: %v", err)
	}
}
