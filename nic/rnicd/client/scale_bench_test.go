package client_test

import (
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
	"github.com/rnic/rnic/nic/rnicd/server"
	"github.com/rnic/rnic/nic/verbs"
)

// BenchmarkCreateConnectQPs creates b.N RC QP pairs on one daemon NIC
// (one client) and connects each pair to RTS, aimed at each other, as an
// application does after exchanging QPNs. It reports time, client heap,
// goroutines and descriptors per pair; the CQs are shared by 1024 QPs.
// The daemon runs in this process (its figures are the daemon's and the
// client's together) or in another, as for every real program: then every
// call is a round trip between processes (the goal is 10,000 QPs in
// a second). The client's QP limit is raised to fit b.N pairs.
func BenchmarkCreateConnectQPs(b *testing.B) {
	maxQPs := func(n int) int { return max(4096, 2*n) }
	b.Run("daemon=in-process", func(b *testing.B) {
		d := rnicdtest.Start(b, rnicdtest.Options{MTU: 9000, Limits: server.Limits{MaxQPs: maxQPs(b.N)}})
		createConnectQPs(b, d.Spec(0))
	})
	b.Run("daemon=process", func(b *testing.B) {
		sock := filepath.Join(b.TempDir(), "rnicd.sock")
		daemon := startChild(b, "RNICD_TEST_ROLE=daemon", "RNICD_TEST_SOCKET="+sock,
			"RNICD_TEST_MAXQPS="+strconv.Itoa(maxQPs(b.N)))
		daemon.expect(b, "ready")
		createConnectQPs(b, ibv.Spec{Backend: ibv.BackendDaemon, Name: "rnic0", Socket: sock})
	})
}

func createConnectQPs(b *testing.B, spec ibv.Spec) {
	dev, err := ibv.Open(spec)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { dev.Close() })
	pd, err := dev.AllocPD()
	if err != nil {
		b.Fatal(err)
	}
	var cq ibv.CQ
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	g0 := runtime.NumGoroutine()
	fd0 := countFDs(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%512 == 0 {
			if cq, err = dev.CreateCQ(1024 * 16); err != nil {
				b.Fatalf("pair %d: %v", i, err)
			}
		}
		var pair [2]*end
		for k := range pair {
			qp, err := dev.CreateQP(pd, ibv.QPInit{Type: verbs.QPTypeRC, SendCQ: cq, RecvCQ: cq,
				Cap: verbs.QPCap{MaxSendWR: 8, MaxRecvWR: 8, MaxSendSGE: 1, MaxRecvSGE: 1}})
			if err != nil {
				b.Fatalf("pair %d: %v", i, err)
			}
			pair[k] = &end{dev: dev, pd: pd, cq: cq, qp: qp}
		}
		connect(b, pair[0], pair[1], nil)
	}
	b.StopTimer()
	g1 := runtime.NumGoroutine()
	fd1 := countFDs(b)
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(b.N), "heap-B/pair")
	b.ReportMetric(float64(g1-g0)/float64(b.N), "goroutines/pair")
	b.ReportMetric(float64(fd1-fd0)/float64(b.N), "fds/pair")
}
