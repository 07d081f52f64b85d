package udp

import (
	"net/netip"
	"testing"
)

// BenchmarkRebuild is the user-space part of receiving, without system
// calls: describing and rebuilding a full batch of 1 KiB datagrams and
// handing them to a batch receiver.
func BenchmarkRebuild(b *testing.B) {
	e := &Endpoint{cfg: Config{Addr: netip.MustParseAddr("127.0.0.2"), Port: DefaultPort,
		BatchSize: DefaultBatchSize, MaxDatagram: DefaultMaxDatagram}}
	n := 0
	e.SetBatchReceiver(func(frames [][]byte) { n += len(frames) })
	r := newReader(e, nil)
	for i := range r.hdrs {
		r.hdrs[i].Len = 1024
	}
	b.ReportAllocs()
	for b.Loop() {
		r.n = len(r.hdrs)
		r.deliver()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/frame")
}
