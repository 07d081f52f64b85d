// A UD send posted before its AH is destroyed.

package server_test

import (
	"testing"
	"time"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
	"github.com/rnic/rnic/nic/rnicd/server"
	"github.com/rnic/rnic/nic/verbs"
)

// TestUDSendThenDestroyAH: a program may destroy an AH right after posting
// sends that name it (mckey's sender does, with unsignaled sends), as a NIC
// copies the address vector into the WQE at post time. The daemon's
// drainer is held so that the WQE is still in the ring when DESTROY_AH
// arrives: the datagram must still leave with that address and arrive.
func TestUDSendThenDestroyAH(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{})
	dev, pd, cq := openWithCQ(t, d.Spec(0), 16)
	buf, err := dev.AllocBuffer(4096)
	if err != nil {
		t.Fatal(err)
	}
	mr, err := dev.RegMR(pd, buf.Bytes(), memory.LocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	const qkey = 0x11111111
	var qps [2]ibv.QP
	for i := range qps {
		qp, err := dev.CreateQP(pd, ibv.QPInit{Type: verbs.QPTypeUD, SendCQ: cq, RecvCQ: cq,
			Cap: verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
		if err != nil {
			t.Fatal(err)
		}
		for _, step := range []struct {
			attr verbs.QPAttr
			mask verbs.QPAttrMask
		}{
			{verbs.QPAttr{State: verbs.QPSInit, PortNum: 1, QKey: qkey}, verbs.AttrState | verbs.AttrPKeyIndex | verbs.AttrPort | verbs.AttrQKey},
			{verbs.QPAttr{State: verbs.QPSRTR}, verbs.AttrState},
			{verbs.QPAttr{State: verbs.QPSRTS}, verbs.AttrState | verbs.AttrSQPSN},
		} {
			if err := qp.Modify(&step.attr, step.mask); err != nil {
				t.Fatal(err)
			}
		}
		qps[i] = qp
	}
	sender, receiver := qps[0], qps[1]
	gid, err := dev.QueryGID(1, 0)
	if err != nil {
		t.Fatal(err)
	}
	ah, err := dev.CreateAH(pd, verbs.AddressVector{DGID: gid, PortNum: 1, HopLimit: 64})
	if err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	copy(b[2048:], "sent before its AH went")
	if err := receiver.PostRecv(&verbs.RecvWR{ID: 1, SGL: []verbs.SGE{{Addr: mr.Addr(), Length: 2048, LKey: mr.LKey()}}}); err != nil {
		t.Fatal(err)
	}

	restart := server.HaltUDDrainers(d.Server)
	err = sender.PostSend(&verbs.SendWR{ID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
		SGL: []verbs.SGE{{Addr: mr.Addr() + 2048, Length: 23, LKey: mr.LKey()}},
		AH:  ah.AV(), RemoteQPN: receiver.QPN(), RemoteQKey: qkey})
	if err != nil {
		restart()
		t.Fatal(err)
	}
	err = ah.Destroy()
	restart()
	if err != nil {
		t.Fatal(err)
	}

	got := map[verbs.WCOpcode]verbs.WC{}
	wc := make([]verbs.WC, 2)
	for deadline := time.Now().Add(10 * time.Second); len(got) < 2 && time.Now().Before(deadline); {
		n := cq.Poll(wc)
		for _, c := range wc[:n] {
			got[c.Opcode] = c
		}
		if n == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	if s, ok := got[verbs.WCSend]; !ok || s.Status != verbs.WCSuccess {
		t.Fatalf("send completion %+v (present %v), want success; QP state %v", s, ok, sender.State())
	}
	if r, ok := got[verbs.WCRecv]; !ok || r.Status != verbs.WCSuccess || string(b[40:40+23]) != "sent before its AH went" {
		t.Fatalf("receive completion %+v (present %v), payload %q", r, ok, b[40:63])
	}
}
