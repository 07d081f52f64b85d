package perf

import (
	"bytes"
	"context"
	"testing"
)

// BenchmarkWriteLat8 is `rnic perf write_lat -s 8` without its raw UDP
// baseline: one op is one round trip of 8-byte WRITEs between the two
// NICs of this process over loopback UDP. allocs/op is the heap
// allocations per round trip (setup spread over b.N); the latency loop
// itself allocates nothing (latState), so with b.N in the thousands it
// is below 1. Profile it with -cpuprofile, or count its instructions
// per round trip under valgrind --tool=callgrind at two b.N.
func BenchmarkWriteLat8(b *testing.B) {
	var out bytes.Buffer
	cfg := Config{Op: OpWrite, Mode: ModeLat, Size: 8, Iters: b.N, Out: &out, RDMAPort: udpTestPort, NoRaw: true}
	b.ReportAllocs()
	res, err := Run(context.Background(), cfg)
	if err != nil {
		b.Fatalf("%v\n%s", err, out.String())
	}
	if !res.Check.OK() {
		b.Fatalf("data check: %+v", res.Check)
	}
	b.ReportMetric(res.Lat.Typical, "t_typical-µs")
}
