package roce

import (
	"fmt"
	"net/netip"
	"runtime"
	"testing"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/transport/clock"
)

// BenchmarkCreateConnectQPs creates b.N RC QPs in one stack and walks each
// RESET → INIT → RTR → RTS, as a connection manager does. It reports the
// heap each connected idle QP keeps: with depth 1 that is the engine's own
// state (the queues are one slot each), with depth 128 the queues of a
// perftest-sized QP come on top.
func BenchmarkCreateConnectQPs(b *testing.B) {
	for _, depth := range []uint32{1, 128} {
		b.Run(fmt.Sprintf("depth=%d", depth), func(b *testing.B) {
			benchCreateConnect(b, depth)
		})
	}
}

func benchCreateConnect(b *testing.B, depth uint32) {
	s, err := NewStack(Config{Link: &captureLink{}, Clock: clock.NewVirtual(), MAC: [6]byte{2, 0, 0, 0, 0, 1},
		Addrs: []netip.Addr{netip.MustParseAddr("192.0.2.1")}})
	if err != nil {
		b.Fatal(err)
	}
	mem, _ := memory.NewTable(memory.Config{})
	cq := &testCQ{}
	qps := make([]*QP, 0, b.N)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		qpn := uint32(0x100 + i)
		eng, err := s.CreateQP(&verbs.QPConfig{Type: verbs.QPTypeRC, QPN: qpn, PD: 1, Memory: mem, SendCQ: cq, RecvCQ: cq,
			RQ: &testRQ{}, Cap: verbs.QPCap{MaxSendWR: depth, MaxRecvWR: depth, MaxSendSGE: 1, MaxRecvSGE: 1}})
		if err != nil {
			b.Fatal(err)
		}
		qp := eng.(*QP)
		connectForBench(b, qp, qpn)
		qps = append(qps, qp)
	}
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(b.N), "heap-B/QP")
	runtime.KeepAlive(qps)
}

// connectForBench walks qp to RTS towards QP qpn|0x800000 of 192.0.2.2.
func connectForBench(b *testing.B, qp *QP, qpn uint32) {
	steps := []struct {
		cur verbs.QPState
		a   verbs.QPAttr
		m   verbs.QPAttrMask
	}{
		{verbs.QPSReset, verbs.QPAttr{State: verbs.QPSInit, AccessFlags: memory.RemoteWrite}, verbs.AttrAccessFlags},
		{verbs.QPSInit, verbs.QPAttr{State: verbs.QPSRTR, PathMTU: verbs.MTU1024, DestQPN: qpn | 0x800000, MaxDestRdAtomic: 1,
			AV: verbs.AddressVector{DGID: netip.MustParseAddr("::ffff:192.0.2.2"), DMAC: [6]byte{2, 0, 0, 0, 0, 2}}},
			verbs.AttrAV | verbs.AttrPathMTU | verbs.AttrDestQPN | verbs.AttrMaxDestRdAtomic},
		{verbs.QPSRTR, verbs.QPAttr{State: verbs.QPSRTS, Timeout: 14, RetryCnt: 7, RNRRetry: 7, MaxRdAtomic: 1},
			verbs.AttrTimeout | verbs.AttrRetryCnt | verbs.AttrRNRRetry | verbs.AttrMaxQPRdAtomic},
	}
	for _, st := range steps {
		if err := qp.Modify(st.cur, &st.a, st.m|verbs.AttrState); err != nil {
			b.Fatal(err)
		}
	}
}
