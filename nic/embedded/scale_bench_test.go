package embedded

import (
	"net/netip"
	"runtime"
	"testing"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/verbs"
)

// scaleDepth is the send and receive queue depth of the benchmark's QPs
// and scaleCQShare how many QPs share a CQ (scaleDepth × scaleCQShare fits
// max_cqe).
const (
	scaleDepth   = 8
	scaleCQShare = 1024
)

// scaleSide is one NIC of BenchmarkCreateConnectQPs with its QPs.
type scaleSide struct {
	n   *NIC
	pd  *nic.PD
	cq  *nic.CQ
	qps []*nic.QP
}

// BenchmarkCreateConnectQPs creates b.N RC QP pairs between two embedded
// NICs on loopback (kernel UDP sockets) and connects each pair RESET →
// INIT → RTR → RTS, as an application does once it has exchanged QPNs and
// PSNs. It reports time, heap and goroutines per pair: nothing per QP may
// be a goroutine or a socket at setup.
func BenchmarkCreateConnectQPs(b *testing.B) {
	a := openScaleSide(b, netip.MustParseAddr("127.0.19.1"))
	c := openScaleSide(b, netip.MustParseAddr("127.0.19.2"))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	g0 := runtime.NumGoroutine()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		x, y := a.createQP(b, i), c.createQP(b, i)
		connectScaleQP(b, x, y, c.n.Addr)
		connectScaleQP(b, y, x, a.n.Addr)
	}
	b.StopTimer()
	g1 := runtime.NumGoroutine()
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(b.N), "heap-B/pair")
	b.ReportMetric(float64(g1-g0)/float64(b.N), "goroutines/pair")
	runtime.KeepAlive(a)
	runtime.KeepAlive(c)
}

func openScaleSide(b *testing.B, addr netip.Addr) *scaleSide {
	n, err := Open(UDPConfig{Addr: addr, MTU: 9000})
	if err != nil {
		b.Skipf("no kernel UDP socket on %v: %v", addr, err)
	}
	b.Cleanup(func() { n.Close() })
	s := &scaleSide{n: n}
	if s.pd, err = n.AllocPD(); err != nil {
		b.Fatal(err)
	}
	return s
}

// createQP creates QP i with a CQ shared by scaleCQShare QPs.
func (s *scaleSide) createQP(b *testing.B, i int) *nic.QP {
	if i%scaleCQShare == 0 {
		var err error
		if s.cq, err = s.n.CreateCQ(2 * scaleDepth * scaleCQShare); err != nil {
			b.Fatal(err)
		}
	}
	qp, err := s.n.CreateQP(s.pd, nic.QPInit{Type: verbs.QPTypeRC, SendCQ: s.cq, RecvCQ: s.cq,
		Cap: verbs.QPCap{MaxSendWR: scaleDepth, MaxRecvWR: scaleDepth, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		b.Fatal(err)
	}
	s.qps = append(s.qps, qp)
	return qp
}

// connectScaleQP walks qp to RTS towards peer, a QP of the NIC at addr.
func connectScaleQP(b *testing.B, qp, peer *nic.QP, addr netip.Addr) {
	all := memory.RemoteWrite | memory.RemoteRead | memory.RemoteAtomic
	if err := qp.Modify(&verbs.QPAttr{State: verbs.QPSInit, PortNum: 1, AccessFlags: all},
		verbs.AttrState|verbs.AttrPKeyIndex|verbs.AttrPort|verbs.AttrAccessFlags); err != nil {
		b.Fatal(err)
	}
	rtr := verbs.QPAttr{State: verbs.QPSRTR, PathMTU: verbs.MTU4096, DestQPN: peer.QPN(), RQPSN: 0x1234,
		MaxDestRdAtomic: 4, MinRNRTimer: 1, AV: verbs.AddressVector{DGID: verbs.GIDFromAddr(addr), HopLimit: 64, PortNum: 1}}
	if err := qp.Modify(&rtr, verbs.AttrState|verbs.AttrAV|verbs.AttrPathMTU|verbs.AttrDestQPN|
		verbs.AttrRQPSN|verbs.AttrMaxDestRdAtomic|verbs.AttrMinRNRTimer); err != nil {
		b.Fatal(err)
	}
	rts := verbs.QPAttr{State: verbs.QPSRTS, SQPSN: 0x1234, Timeout: 14, RetryCnt: 7, RNRRetry: 7, MaxRdAtomic: 4}
	if err := qp.Modify(&rts, verbs.AttrState|verbs.AttrSQPSN|verbs.AttrTimeout|verbs.AttrRetryCnt|
		verbs.AttrRNRRetry|verbs.AttrMaxQPRdAtomic); err != nil {
		b.Fatal(err)
	}
}
