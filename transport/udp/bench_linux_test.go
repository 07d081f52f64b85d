// Throughput over loopback: the link (frames in, rebuilt frames out) and,
// as the baseline of the same run, plain UDP sockets moving datagrams of the
// same size with sendto/recvfrom. The ratio of the two is what the link
// costs: header parsing and synthesis, ancillary data, per-port sockets.
//
// Both keep at most benchWindow datagrams in flight, as a RoCE requester
// keeps a window, so the receive buffer never overflows and no datagram
// is lost; a stall (a loss after all) panics after benchStall instead of
// hanging.
//
//	go test -run XXX -bench . ./transport/udp

package udp

import (
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"testing"
	"time"
)

const (
	benchWindow = 128
	benchStall  = 10 * time.Second
)

// window hands out in-flight credits.
type window chan struct{}

func (w window) take(n int) {
	for range n {
		select {
		case w <- struct{}{}:
		default:
			select {
			case w <- struct{}{}:
			case <-time.After(benchStall):
				panic("benchmark stalled: a datagram was lost")
			}
		}
	}
}

func (w window) give(n int) {
	for range n {
		<-w
	}
}

// drain waits until every credit has come back.
func (w window) drain() {
	deadline := time.Now().Add(benchStall)
	for len(w) > 0 {
		if time.Now().After(deadline) {
			panic("benchmark stalled: a datagram was lost")
		}
		runtime.Gosched()
	}
}

func BenchmarkLink(b *testing.B) {
	for _, size := range []int{1024, 4096} {
		for _, batch := range []int{1, 32} {
			name := fmt.Sprintf("%dKiB/single", size/1024)
			if batch > 1 {
				name = fmt.Sprintf("%dKiB/batch%d", size/1024, batch)
			}
			b.Run(name, func(b *testing.B) { benchLink(b, size, batch) })
		}
	}
}

func benchLink(b *testing.B, size, batch int) {
	src, dst := openPair(b, false, nil)
	w := make(window, benchWindow)
	dst.SetBatchReceiver(func(frames [][]byte) { w.give(len(frames)) })
	frame := roceFrame(src, dst, frameOpts{payload: make([]byte, size)})
	frames := make([][]byte, batch)
	for i := range frames {
		frames[i] = frame
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += batch {
		k := min(batch, b.N-i)
		w.take(k)
		var err error
		if batch == 1 {
			err = src.Send(frame)
		} else {
			err = src.SendBatch(frames[:k])
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	w.drain()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "frames/s")
	if st := dst.Stats(); st.Received != uint64(b.N) || st.KernelDrops != 0 {
		b.Fatalf("stats %+v after %d frames", st, b.N)
	}
}

// BenchmarkRawUDP is the baseline: the same datagrams (the UDP payload of
// the link benchmark's frames) between two plain sockets.
func BenchmarkRawUDP(b *testing.B) {
	for _, size := range []int{1024, 4096} {
		b.Run(fmt.Sprintf("%dKiB", size/1024), func(b *testing.B) { benchRaw(b, size) })
	}
}

func benchRaw(b *testing.B, size int) {
	n := pairSeq.Add(1)
	addrA := netip.AddrFrom4([4]byte{127, 77, byte(n >> 6), byte(n<<2) | 2})
	addrB := netip.AddrFrom4([4]byte{127, 77, byte(n >> 6), byte(n<<2) | 3})
	ca, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(addrA, 0)))
	if err != nil {
		b.Fatal(err)
	}
	defer ca.Close()
	cb, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(addrB, 0)))
	if err != nil {
		b.Fatal(err)
	}
	defer cb.Close()
	if err := cb.SetReadBuffer(DefaultRecvBuffer); err != nil {
		b.Fatal(err)
	}
	to := cb.LocalAddr().(*net.UDPAddr).AddrPort()
	// The link benchmark's datagram: BTH, payload, ICRC.
	dgram := make([]byte, 12+size+4)
	w := make(window, benchWindow)
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 65536)
		for {
			if _, _, err := cb.ReadFromUDPAddrPort(buf); err != nil {
				return
			}
			w.give(1)
		}
	}()
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		w.take(1)
		if _, err := ca.WriteToUDPAddrPort(dgram, to); err != nil {
			b.Fatal(err)
		}
	}
	w.drain()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "frames/s")
	cb.Close()
	<-done
}
