package client_test

import (
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
)

// BenchmarkSetupSteps does through the Go client what the C program of
// the drop-in's BenchmarkDropinSetup (dropin/bench/setup.c) does through
// the C library, with the same attributes and the same order: create b.N
// RC QPs (CQs shared by 1024), take each to RTS aimed at its neighbour,
// destroy them all. The daemon is another process, as for the C program.
// ns/op is create and connect per QP, as there; the steps are reported
// apart, in µs per QP, to compare with the C figures step by step, and
// so are the process's sleeps and CPU time while it connects.
//
// With RNIC_BENCH_SOCKET set it runs on the rnicd serving that socket
// (make bench gives it the rnicd binary the C program runs on, so that
// the two compare on one daemon).
func BenchmarkSetupSteps(b *testing.B) {
	n := max(b.N, 2)
	sock := os.Getenv(setupSocketEnv)
	if sock == "" {
		sock = filepath.Join(b.TempDir(), "rnicd.sock")
		daemon := startChild(b, "RNICD_TEST_ROLE=daemon", "RNICD_TEST_SOCKET="+sock,
			"RNICD_TEST_MAXQPS="+strconv.Itoa(max(4096, n)))
		daemon.expect(b, "ready")
	}
	dev, err := ibv.Open(ibv.Spec{Backend: ibv.BackendDaemon, Name: "rnic0", Socket: sock})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { dev.Close() })
	pd, err := dev.AllocPD()
	if err != nil {
		b.Fatal(err)
	}
	av := verbs.AddressVector{DGID: dev.GIDs()[0], HopLimit: 64, PortNum: 1}
	b.ReportAllocs()
	qps := make([]ibv.QP, n)
	var cq ibv.CQ
	b.ResetTimer()
	t0 := time.Now()
	for i := range qps {
		if i%1024 == 0 {
			if cq, err = dev.CreateCQ(4096); err != nil {
				b.Fatal(err)
			}
		}
		if qps[i], err = dev.CreateQP(pd, ibv.QPInit{Type: verbs.QPTypeRC, SendCQ: cq, RecvCQ: cq,
			Cap: verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}}); err != nil {
			b.Fatalf("QP %d: %v", i, err)
		}
	}
	t1 := time.Now()
	u1 := usageNow(b)
	for i, qp := range qps {
		peer := qps[min(i^1, n-1)]
		if err := toRTS(qp, peer.QPN(), av); err != nil {
			b.Fatalf("QP %d to RTS: %v", i, err)
		}
	}
	t2 := time.Now()
	u2 := usageNow(b)
	for i, qp := range qps {
		if err := qp.Destroy(); err != nil {
			b.Fatalf("destroy QP %d: %v", i, err)
		}
	}
	t3 := time.Now()
	b.StopTimer()
	perQP := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(n) }
	b.ReportMetric(float64(t2.Sub(t0).Nanoseconds())/float64(b.N), "ns/op")
	b.ReportMetric(perQP(t1.Sub(t0)), "create-µs/QP")
	b.ReportMetric(perQP(t2.Sub(t1)), "connect-µs/QP")
	b.ReportMetric(perQP(t3.Sub(t2)), "destroy-µs/QP")
	b.ReportMetric(float64(u2.sleeps-u1.sleeps)/float64(n), "connect-sleeps/QP")
	b.ReportMetric(float64(u2.cpu-u1.cpu)/1e3/float64(n), "connect-cpu-µs/QP")
}

// setupSocketEnv names an rnicd socket BenchmarkSetupSteps runs on.
const setupSocketEnv = "RNIC_BENCH_SOCKET"

// usage is what this process has spent: its voluntary context switches
// (sleeps, each ended by a wake-up) and CPU time, which the load of a
// shared machine changes less than it changes the time.
type usage struct {
	sleeps int64
	cpu    int64 // ns
}

func usageNow(b *testing.B) usage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return usage{sleeps: ru.Nvcsw, cpu: ru.Utime.Nano() + ru.Stime.Nano()}
}

// toRTS takes qp through INIT and RTR to RTS with setup.c's attributes.
func toRTS(qp ibv.QP, dest uint32, av verbs.AddressVector) error {
	init := verbs.QPAttr{State: verbs.QPSInit, PortNum: 1, AccessFlags: memory.RemoteWrite | memory.RemoteRead}
	if err := qp.Modify(&init, verbs.AttrState|verbs.AttrPKeyIndex|verbs.AttrPort|verbs.AttrAccessFlags); err != nil {
		return err
	}
	rtr := verbs.QPAttr{State: verbs.QPSRTR, PathMTU: verbs.MTU1024, DestQPN: dest, RQPSN: 1, AV: av,
		MaxDestRdAtomic: 1, MinRNRTimer: 12}
	if err := qp.Modify(&rtr, verbs.AttrState|verbs.AttrAV|verbs.AttrPathMTU|verbs.AttrDestQPN|
		verbs.AttrRQPSN|verbs.AttrMaxDestRdAtomic|verbs.AttrMinRNRTimer); err != nil {
		return err
	}
	rts := verbs.QPAttr{State: verbs.QPSRTS, SQPSN: 1, Timeout: 14, RetryCnt: 7, RNRRetry: 7, MaxRdAtomic: 1}
	return qp.Modify(&rts, verbs.AttrState|verbs.AttrSQPSN|verbs.AttrTimeout|verbs.AttrRetryCnt|
		verbs.AttrRNRRetry|verbs.AttrMaxQPRdAtomic)
}

// BenchmarkCalls: QP queries, round trips to a daemon in another process,
// from one goroutine and from four at once (ns/op is per call). A call
// reads its own reply; a reply to a call that waits while another reads
// is handed over.
func BenchmarkCalls(b *testing.B) {
	sock := filepath.Join(b.TempDir(), "rnicd.sock")
	daemon := startChild(b, "RNICD_TEST_ROLE=daemon", "RNICD_TEST_SOCKET="+sock)
	daemon.expect(b, "ready")
	dev, err := ibv.Open(ibv.Spec{Backend: ibv.BackendDaemon, Name: "rnic0", Socket: sock})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { dev.Close() })
	e := newEnd(b, dev, verbs.QPTypeRC, 4096)
	for _, callers := range []int{1, 4} {
		b.Run("callers="+strconv.Itoa(callers), func(b *testing.B) {
			b.ReportAllocs()
			var wg sync.WaitGroup
			for g := range callers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := g; i < b.N; i += callers {
						if _, err := e.qp.Query(); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
		})
	}
}
