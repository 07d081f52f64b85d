// Tests of the simulated link: timing (latency, bandwidth, jitter), FIFO
// order, copy semantics, no re-entrancy, close, and determinism from a seed.
// The helpers at the top are shared by the other tests of the package.

package transport_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rnic/rnic/transport"
	"github.com/rnic/rnic/transport/clock"
	"github.com/rnic/rnic/transport/pcap"
)

// mkFrame builds an n-byte Ethernet frame (local experimental EtherType
// 0x88b5) carrying id right after the header, so tests can tell frames
// apart. The transport never looks inside; the header only keeps captures
// readable in Wireshark.
func mkFrame(id uint32, n int) []byte {
	if n < 18 {
		n = 18
	}
	f := make([]byte, n)
	copy(f[0:6], []byte{0x02, 0, 0, 0, 0, 0x02})
	copy(f[6:12], []byte{0x02, 0, 0, 0, 0, 0x01})
	binary.BigEndian.PutUint16(f[12:14], 0x88b5)
	binary.BigEndian.PutUint32(f[14:18], id)
	// The filler depends on a hash of id, so two frames never differ by a
	// single bit: a corrupted frame cannot pass for another one.
	h := id * 0x9e3779b1
	for i := 18; i < n; i++ {
		f[i] = byte(i*7) ^ byte(h>>(8*(i%4)))
	}
	return f
}

func frameID(f []byte) uint32 { return binary.BigEndian.Uint32(f[14:18]) }

// arrival is one delivery as a receiver saw it.
type arrival struct {
	at   time.Duration
	data string
}

func (a arrival) id() uint32 { return frameID([]byte(a.data)) }

// recorder installs a receiver on ep that logs arrivals with clk's time.
func recorder(clk clock.Clock, ep transport.Endpoint) *[]arrival {
	var log []arrival
	ep.SetReceiver(func(f []byte) { log = append(log, arrival{clk.Now(), string(f)}) })
	return &log
}

func checkConservation(t *testing.T, name string, c transport.Counters) {
	t.Helper()
	if c.Sent-c.Dropped+c.Duplicated != c.Delivered+c.Discarded {
		t.Errorf("%s: counters do not balance: %+v", name, c)
	}
}

func TestSimLinkLatencyAndOrder(t *testing.T) {
	clk := clock.NewVirtual()
	a, b := transport.NewSimLink(clk, transport.SimConfig{})
	got := recorder(clk, b)
	for i := range 5 {
		if err := a.Send(mkFrame(uint32(i), 64)); err != nil {
			t.Fatal(err)
		}
	}
	if len(*got) != 0 {
		t.Fatal("Send delivered synchronously")
	}
	if n := clk.Pending(); n != 5 {
		t.Fatalf("pending events = %d, want 5", n)
	}
	clk.Run(nil)
	if len(*got) != 5 {
		t.Fatalf("delivered %d frames, want 5", len(*got))
	}
	for i, g := range *got {
		if g.id() != uint32(i) || g.at != transport.DefaultLatency {
			t.Errorf("arrival %d: id %d at %v, want id %d at %v", i, g.id(), g.at, i, transport.DefaultLatency)
		}
	}
	st := a.Stats()
	if st.Sent != 5 || st.Delivered != 5 {
		t.Errorf("stats = %+v", st)
	}
	checkConservation(t, "a", st)
}

func TestSimLinkBandwidth(t *testing.T) {
	clk := clock.NewVirtual()
	// 1 Gb/s: a 1000-byte frame occupies the wire for 8µs.
	a, b := transport.NewSimLink(clk, transport.SimConfig{Latency: 2 * time.Microsecond, Bandwidth: 1e9})
	got := recorder(clk, b)
	for i := range 3 {
		_ = a.Send(mkFrame(uint32(i), 1000))
	}
	clk.Run(nil)
	for i, g := range *got {
		want := time.Duration(i+1)*8*time.Microsecond + 2*time.Microsecond
		if g.at != want {
			t.Errorf("frame %d arrived at %v, want %v", i, g.at, want)
		}
	}
	// The other direction has its own wire.
	got2 := recorder(clk, a)
	start := clk.Now()
	_ = b.Send(mkFrame(9, 1000))
	clk.Run(nil)
	if d := (*got2)[0].at - start; d != 10*time.Microsecond {
		t.Errorf("reverse frame took %v, want 10µs", d)
	}
}

func TestSimLinkJitterKeepsOrder(t *testing.T) {
	clk := clock.NewVirtual()
	lat, jit := 3*time.Microsecond, 5*time.Microsecond
	a, b := transport.NewSimLink(clk, transport.SimConfig{Seed: 1, Latency: lat, Jitter: jit})
	sentAt := map[uint32]time.Duration{}
	got := recorder(clk, b)
	const n = 1000
	for i := range n {
		clk.AfterFunc(time.Duration(i)*100*time.Nanosecond, func() {
			sentAt[uint32(i)] = clk.Now()
			_ = a.Send(mkFrame(uint32(i), 64))
		})
	}
	clk.Run(nil)
	if len(*got) != n {
		t.Fatalf("delivered %d, want %d", len(*got), n)
	}
	seen := map[time.Duration]bool{}
	for i, g := range *got {
		if g.id() != uint32(i) {
			t.Fatalf("arrival %d is frame %d: jitter reordered the link", i, g.id())
		}
		d := g.at - sentAt[g.id()]
		if d < lat || d > lat+jit {
			t.Fatalf("frame %d took %v, outside [%v, %v]", i, d, lat, lat+jit)
		}
		seen[d] = true
	}
	if len(seen) < 10 {
		t.Errorf("only %d distinct latencies: jitter not applied", len(seen))
	}
}

func TestSimLinkSendCopies(t *testing.T) {
	clk := clock.NewVirtual()
	a, b := transport.NewSimLink(clk, transport.SimConfig{})
	got := recorder(clk, b)
	buf := mkFrame(1, 64)
	want := string(buf)
	_ = a.Send(buf)
	for i := range buf {
		buf[i] = 0xff
	}
	clk.Run(nil)
	if len(*got) != 1 || (*got)[0].data != want {
		t.Fatal("mutating the caller's buffer after Send changed the delivered frame")
	}
}

// A receiver that answers from inside its callback (what engines do) must
// work, and each round trip must take two latencies.
func TestSimLinkPingPong(t *testing.T) {
	clk := clock.NewVirtual()
	a, b := transport.NewSimLink(clk, transport.SimConfig{})
	const rounds = 100
	n := 0
	b.SetReceiver(func(f []byte) { _ = b.Send(f) })
	a.SetReceiver(func(f []byte) {
		n++
		if n < rounds {
			_ = a.Send(mkFrame(uint32(n), 64))
		}
	})
	_ = a.Send(mkFrame(0, 64))
	clk.Run(nil)
	if n != rounds {
		t.Fatalf("%d round trips, want %d", n, rounds)
	}
	if want := rounds * 2 * transport.DefaultLatency; clk.Now() != want {
		t.Errorf("finished at %v, want %v", clk.Now(), want)
	}
}

func TestSimLinkClose(t *testing.T) {
	clk := clock.NewVirtual()
	a, b := transport.NewSimLink(clk, transport.SimConfig{})
	got := recorder(clk, b)
	_ = a.Send(mkFrame(1, 64)) // in flight when b closes
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	clk.Run(nil)
	if len(*got) != 0 {
		t.Error("closed endpoint received a frame")
	}
	if err := b.Send(mkFrame(2, 64)); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("Send on closed endpoint: %v, want ErrClosed", err)
	}
	if st := a.Stats(); st.Discarded != 1 || st.Delivered != 0 {
		t.Errorf("stats = %+v, want one discarded", st)
	}
	if err := a.Send(nil); !errors.Is(err, transport.ErrEmptyFrame) {
		t.Errorf("empty Send: %v, want ErrEmptyFrame", err)
	}
}

func TestSimLinkNoReceiver(t *testing.T) {
	clk := clock.NewVirtual()
	a, _ := transport.NewSimLink(clk, transport.SimConfig{})
	_ = a.Send(mkFrame(1, 64))
	clk.Run(nil)
	if st := a.Stats(); st.Discarded != 1 {
		t.Errorf("stats = %+v, want one discarded", st)
	}
}

func TestNewSimLinkRejectsBadConfig(t *testing.T) {
	for _, cfg := range []transport.SimConfig{
		{Latency: -1},
		{Jitter: -1},
		{Faults: transport.Symmetric(transport.Faults{Loss: 1.5})},
		{Faults: transport.FaultConfig{BtoA: transport.Faults{Delay: 0.5}}},
	} {
		if cfg.Validate() == nil {
			t.Errorf("Validate accepted %+v", cfg)
		}
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewSimLink accepted %+v", cfg)
				}
			}()
			transport.NewSimLink(clock.NewVirtual(), cfg)
		}()
	}
}

// simRun drives a busy two-way conversation over a faulty, jittery,
// bandwidth-limited link and returns both receivers' logs and the pcap.
func simRun(t *testing.T, seed uint64) (log []string, capture []byte) {
	t.Helper()
	clk := clock.NewVirtual()
	var buf bytes.Buffer
	w, err := pcap.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	f := transport.Faults{Loss: 0.1, Dup: 0.1, Corrupt: 0.1, Reorder: 0.1, Delay: 0.05, DelayMin: time.Microsecond, DelayMax: 20 * time.Microsecond}
	a, b := transport.NewSimLink(clk, transport.SimConfig{
		Seed: seed, Jitter: 500 * time.Nanosecond, Bandwidth: 10e9,
		Faults: transport.Symmetric(f), Pcap: w,
	})
	for _, ep := range []*transport.SimEndpoint{a, b} {
		ep.SetReceiver(func(fr []byte) {
			log = append(log, fmt.Sprintf("%v %v %x", clk.Now(), ep.Direction(), fr))
			// Answer some frames, so that both directions interleave.
			if fr[len(fr)-1]%3 == 0 {
				_ = ep.Send(mkFrame(frameID(fr)+1000, 80))
			}
		})
	}
	for i := range 300 {
		clk.AfterFunc(time.Duration(i)*200*time.Nanosecond, func() { _ = a.Send(mkFrame(uint32(i), 60+i%200)) })
	}
	clk.Run(nil)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	checkConservation(t, "a", a.Stats())
	checkConservation(t, "b", b.Stats())
	return log, buf.Bytes()
}

func TestSimLinkDeterminism(t *testing.T) {
	log1, pcap1 := simRun(t, 42)
	log2, pcap2 := simRun(t, 42)
	if len(log1) < 200 {
		t.Fatalf("only %d deliveries", len(log1))
	}
	if fmt.Sprint(log1) != fmt.Sprint(log2) {
		t.Error("same seed gave different deliveries")
	}
	if !bytes.Equal(pcap1, pcap2) {
		t.Error("same seed gave different pcap bytes")
	}
	log3, pcap3 := simRun(t, 43)
	if fmt.Sprint(log1) == fmt.Sprint(log3) || bytes.Equal(pcap1, pcap3) {
		t.Error("different seeds gave identical runs")
	}
}

func BenchmarkSimLink(b *testing.B) {
	for _, bc := range []struct {
		name string
		cfg  transport.SimConfig
	}{
		{"plain", transport.SimConfig{}},
		{"jitter+bandwidth", transport.SimConfig{Jitter: time.Microsecond, Bandwidth: 100e9}},
		{"faults", transport.SimConfig{Faults: transport.Symmetric(transport.Faults{Loss: 0.01, Dup: 0.01, Reorder: 0.01, Corrupt: 0.01})}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			clk := clock.NewVirtual()
			a, z := transport.NewSimLink(clk, bc.cfg)
			n := 0
			z.SetReceiver(func([]byte) { n++ })
			frame := mkFrame(1, 1078) // a 1024-byte RoCE payload plus headers
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			for b.Loop() {
				_ = a.Send(frame)
				clk.Run(nil)
			}
			_ = n
		})
	}
}

// Sends from several goroutines while the clock runs elsewhere must be
// race-free (determinism is then lost, safety is not).
func TestSimLinkConcurrentUse(t *testing.T) {
	clk := clock.NewVirtual()
	a, b := transport.NewSimLink(clk, transport.SimConfig{Faults: transport.Symmetric(transport.Faults{Dup: 0.1, Loss: 0.1})})
	var n atomic.Int64
	b.SetReceiver(func([]byte) { n.Add(1) })
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				_ = a.Send(mkFrame(uint32(g*1000+i), 64))
				_ = a.Stats()
			}
		}()
	}
	done := make(chan struct{})
	runnerExited := make(chan struct{})
	go func() {
		defer close(runnerExited)
		for {
			select {
			case <-done:
				return
			default:
				clk.Run(nil)
			}
		}
	}()
	wg.Wait()
	close(done)
	// The runner may be in the middle of a delivery it already took off
	// the clock: wait for it before the final drain and the counters.
	<-runnerExited
	clk.Run(nil)
	st := a.Stats()
	checkConservation(t, "a", st)
	if st.Sent != 800 || uint64(n.Load()) != st.Delivered {
		t.Errorf("stats %+v, receiver saw %d", st, n.Load())
	}
}

// Carrying a frame allocates nothing once the link has carried as many
// frames at a time before: the buffers and the clock events are reused.
// With loss, a lost frame's buffer goes back too.
func TestSimLinkZeroAlloc(t *testing.T) {
	for _, cfg := range []transport.SimConfig{
		{},
		{Jitter: time.Microsecond, Bandwidth: 100e9, Faults: transport.Symmetric(transport.Faults{Loss: 0.1, Reorder: 0.1, Corrupt: 0.1})},
	} {
		clk := clock.NewVirtual()
		a, b := transport.NewSimLink(clk, cfg)
		b.SetReceiver(func(f []byte) { _ = b.Send(f[:64]) }) // answer from the callback
		a.SetReceiver(func([]byte) {})
		big, small := mkFrame(1, 4170), mkFrame(2, 60)
		burst := func() {
			for range 8 {
				_ = a.Send(big)
				_ = a.Send(small)
			}
			clk.Run(nil)
		}
		burst()
		if n := testing.AllocsPerRun(100, burst); n != 0 {
			t.Errorf("%+v: %v allocations per burst of 16 frames", cfg.Faults.AtoB, n)
		}
	}
}

// Reused buffers never leak one frame's bytes into another: frames of
// mixed sizes, many in flight at once, each arrives as it was sent.
func TestSimLinkReusedBuffersKeepFrames(t *testing.T) {
	clk := clock.NewVirtual()
	a, b := transport.NewSimLink(clk, transport.SimConfig{Jitter: 3 * time.Microsecond,
		Faults: transport.Symmetric(transport.Faults{Loss: 0.2, Dup: 0.2, Reorder: 0.2})})
	sizes := []int{60, 1078, 4170, 9018, 18, 2048, 2049}
	want := map[uint32]string{}
	got := recorder(clk, b)
	id := uint32(0)
	for round := range 50 {
		for i := range 3 + round%17 {
			id++
			f := mkFrame(id, sizes[(int(id)+i)%len(sizes)])
			want[id] = string(f)
			_ = a.Send(f)
		}
		clk.RunFor(time.Duration(round%4) * time.Microsecond)
	}
	clk.Run(nil)
	if len(*got) < int(id)/2 {
		t.Fatalf("only %d of %d frames arrived", len(*got), id)
	}
	for _, r := range *got {
		if want[r.id()] != r.data {
			t.Fatalf("frame %d arrived with other bytes (%d long, sent %d)", r.id(), len(r.data), len(want[r.id()]))
		}
	}
	checkConservation(t, "a", a.Stats())
}
