package embedded_test

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/verbs"
)

// Two NICs in one process over loopback UDP: an RC QP pair, and an RDMA
// WRITE from one to the other, with verbs as libibverbs has them.
func Example() {
	a, _ := embedded.Open(embedded.UDPConfig{Name: "rnic0", Addr: netip.MustParseAddr("127.0.0.42")})
	b, _ := embedded.Open(embedded.UDPConfig{Name: "rnic1", Addr: netip.MustParseAddr("127.0.0.43")})
	defer a.Close()
	defer b.Close()

	type end struct {
		n   *embedded.NIC
		pd  *nic.PD
		mr  *nic.MR
		cq  *nic.CQ
		qp  *nic.QP
		buf []byte
	}
	mk := func(n *embedded.NIC) *end {
		e := &end{n: n}
		sh, _ := memory.NewShared(4096) // registered memory lives outside the Go heap
		e.buf = sh.Bytes()
		e.pd, _ = n.AllocPD()
		e.mr, _ = n.RegMRShared(e.pd, sh, 0, 4096, memory.LocalWrite|memory.RemoteWrite)
		e.cq, _ = n.CreateCQ(16)
		e.qp, _ = n.CreateQP(e.pd, nic.QPInit{Type: verbs.QPTypeRC, SendCQ: e.cq, RecvCQ: e.cq,
			Cap: verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
		return e
	}
	x, y := mk(a), mk(b)
	// RESET -> INIT -> RTR -> RTS, each side with the other's QPN and PSN
	// (what an out-of-band exchange or rdma_cm would carry).
	connect := func(me, peer *end) {
		me.qp.Modify(&verbs.QPAttr{State: verbs.QPSInit, PortNum: 1, AccessFlags: memory.RemoteWrite},
			verbs.AttrState|verbs.AttrPKeyIndex|verbs.AttrPort|verbs.AttrAccessFlags)
		me.qp.Modify(&verbs.QPAttr{State: verbs.QPSRTR, PathMTU: verbs.MTU1024, DestQPN: peer.qp.QPN(), RQPSN: 100,
			MaxDestRdAtomic: 1, MinRNRTimer: 12, AV: verbs.AddressVector{DGID: verbs.GIDFromAddr(peer.n.Addr), HopLimit: 64, PortNum: 1}},
			verbs.AttrState|verbs.AttrAV|verbs.AttrPathMTU|verbs.AttrDestQPN|verbs.AttrRQPSN|verbs.AttrMaxDestRdAtomic|verbs.AttrMinRNRTimer)
		me.qp.Modify(&verbs.QPAttr{State: verbs.QPSRTS, SQPSN: 100, Timeout: 14, RetryCnt: 7, RNRRetry: 7, MaxRdAtomic: 1},
			verbs.AttrState|verbs.AttrSQPSN|verbs.AttrTimeout|verbs.AttrRetryCnt|verbs.AttrRNRRetry|verbs.AttrMaxQPRdAtomic)
	}
	connect(x, y)
	connect(y, x)

	copy(x.buf, "hello over RoCEv2")
	wr := verbs.SendWR{ID: 1, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
		SGL:        []verbs.SGE{{Addr: x.mr.Addr(), Length: 17, LKey: x.mr.LKey()}},
		RemoteAddr: y.mr.Addr(), RKey: y.mr.RKey()}
	if err := x.qp.PostSend(&wr); err != nil {
		fmt.Println(err)
		return
	}
	wcs := make([]verbs.WC, 1)
	for deadline := time.Now().Add(2 * time.Second); x.cq.Poll(wcs) == 0 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Microsecond)
	}
	fmt.Println(wcs[0].Status, string(y.buf[:17]))
	// Output: SUCCESS hello over RoCEv2
}
