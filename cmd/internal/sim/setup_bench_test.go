package sim

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/rnic/rnic/transport"
	"github.com/rnic/rnic/transport/clock"
)

// BenchmarkCreateConnectQPs creates and connects b.N RC QP pairs between
// two simulated devices (each pair: two CQs, an MR and a QP per side,
// RESET → INIT → RTR → RTS on both), and reports the time and the heap
// per QP pair.
func BenchmarkCreateConnectQPs(b *testing.B) {
	cfg := Config{QPs: 1, Depth: 1, MaxMsg: 64}
	if err := cfg.defaults(); err != nil {
		b.Fatal(err)
	}
	clk := clock.NewVirtual()
	ea, eb := transport.NewSimLink(clk, transport.SimConfig{Seed: 1})
	w := &world{cfg: cfg, clk: clk, rng: rand.New(rand.NewPCG(1, 2)), psns: rand.New(rand.NewPCG(1, 3))}
	var err error
	if w.a, err = w.newNode("rnic0", ea, 1); err != nil {
		b.Fatal(err)
	}
	if w.b, err = w.newNode("rnic1", eb, 2); err != nil {
		b.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := w.newPair(i); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(b.N), "heap-B/pair")
	runtime.KeepAlive(w)
}
