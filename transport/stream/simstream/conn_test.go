// Tests of the simulated stream: reliability and order under arbitrary
// split/coalesce, determinism from the seed, timing, backpressure, and the
// corruption, reset, abort and half-close paths.

package simstream_test

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/rnic/rnic/transport"
	"github.com/rnic/rnic/transport/clock"
	"github.com/rnic/rnic/transport/stream"
	"github.com/rnic/rnic/transport/stream/simstream"
	"github.com/rnic/rnic/transport/stream/streamtest"
)

// chunkTrace is one delivery: when and how much.
type chunkTrace struct {
	at time.Duration
	n  int
}

type simRun struct {
	a2b, b2a     []byte
	fa, fb       *streamtest.Feeder
	sa, sb       *streamtest.Sink
	clk          *clock.Virtual
	a, b         *simstream.Conn
	traceA, trcB []chunkTrace
}

// runSim exchanges n random bytes each way over a simulated pair with cfg,
// both ends writing in random sizes up to maxWrite, then closing, and runs
// the clock to the end.
func runSim(t *testing.T, cfg simstream.Config, n, maxWrite int) *simRun {
	t.Helper()
	r := &simRun{clk: clock.NewVirtual()}
	r.a, r.b = simstream.NewPair(r.clk, cfg)
	r.a2b, r.b2a = streamtest.Pattern(1, n), streamtest.Pattern(2, n)
	r.sa, r.sb = streamtest.NewSink(r.a, r.clk.Now), streamtest.NewSink(r.b, r.clk.Now)
	r.fa = streamtest.NewFeeder(r.a, r.a2b, cfg.Seed^1, maxWrite, true)
	r.fb = streamtest.NewFeeder(r.b, r.b2a, cfg.Seed^2, maxWrite, true)
	r.clk.AfterFunc(0, r.fa.Pump)
	r.clk.AfterFunc(3*time.Microsecond, r.fb.Pump)
	r.clk.Run(nil)
	for i, n := range r.sa.Chunks {
		r.traceA = append(r.traceA, chunkTrace{r.sa.Times[i], n})
	}
	for i, n := range r.sb.Chunks {
		r.trcB = append(r.trcB, chunkTrace{r.sb.Times[i], n})
	}
	return r
}

// arbitrary splits and coalesces the stream as a busy network would.
var arbitrary = simstream.Config{
	Seed:       42,
	Latency:    5 * time.Microsecond,
	Bandwidth:  10e9,
	Chop:       0.5,
	Coalesce:   2 * time.Microsecond,
	SendBuffer: 64 << 10,
}

func TestSimExchangeSplitCoalesce(t *testing.T) {
	r := runSim(t, arbitrary, 1<<20, 20000)
	streamtest.CheckDelivered(t, "B", r.sb, r.a2b, io.EOF)
	streamtest.CheckDelivered(t, "A", r.sa, r.b2a, io.EOF)
	for _, c := range []struct {
		name   string
		f      *streamtest.Feeder
		chunks []int
	}{{"A->B", r.fa, r.sb.Chunks}, {"B->A", r.fb, r.sa.Chunks}} {
		if c.f.Err != nil {
			t.Errorf("%s: writer: %v", c.name, c.f.Err)
		}
		split, coalesced := streamtest.SplitAndCoalesced(c.f.Writes, c.chunks)
		t.Logf("%s: %d writes, %d chunks (sizes %v...), %d refusals", c.name, len(c.f.Writes), len(c.chunks), c.chunks[:min(8, len(c.chunks))], c.f.Refusals)
		if !split || !coalesced {
			t.Errorf("%s: split=%v coalesced=%v; want both", c.name, split, coalesced)
		}
		if c.f.Refusals == 0 {
			t.Errorf("%s: the 64 KiB send buffer never refused a write", c.name)
		}
		if slices.Contains(c.chunks, 0) {
			t.Errorf("%s: empty chunk delivered", c.name)
		}
	}
	if r.a.Buffered() != 0 || r.b.Buffered() != 0 {
		t.Errorf("Buffered = %d, %d after the end", r.a.Buffered(), r.b.Buffered())
	}
	if _, err := r.a.Write([]byte("x")); !errors.Is(err, stream.ErrClosed) {
		t.Errorf("Write after Close: %v, want ErrClosed", err)
	}
}

func TestSimZeroConfig(t *testing.T) {
	// The zero config is reliable too: segments at the MSS, writes of one
	// event coalesced.
	r := runSim(t, simstream.Config{}, 300000, 5000)
	streamtest.CheckDelivered(t, "B", r.sb, r.a2b, io.EOF)
	streamtest.CheckDelivered(t, "A", r.sa, r.b2a, io.EOF)
}

func TestSimDeterminism(t *testing.T) {
	r1 := runSim(t, arbitrary, 200000, 9000)
	r2 := runSim(t, arbitrary, 200000, 9000)
	if !slices.Equal(r1.traceA, r2.traceA) || !slices.Equal(r1.trcB, r2.trcB) {
		t.Errorf("same seed, different deliveries")
	}
	if r1.clk.Now() != r2.clk.Now() {
		t.Errorf("same seed, different end times %v, %v", r1.clk.Now(), r2.clk.Now())
	}
	other := arbitrary
	other.Seed++
	r3 := runSim(t, other, 200000, 9000)
	if slices.Equal(r1.trcB, r3.trcB) {
		t.Errorf("different seeds, identical chunk boundaries")
	}
	streamtest.CheckDelivered(t, "B (other seed)", r3.sb, r3.a2b, io.EOF)
}

func TestSimTiming(t *testing.T) {
	// One 10000-byte write at 1 Gb/s with 100µs latency: the last byte
	// leaves after 80µs of serialisation and arrives 100µs later.
	clk := clock.NewVirtual()
	a, b := simstream.NewPair(clk, simstream.Config{Latency: 100 * time.Microsecond, Bandwidth: 1e9})
	s := streamtest.NewSink(b, clk.Now)
	if _, err := a.Write(make([]byte, 10000)); err != nil {
		t.Fatal(err)
	}
	if len(s.Chunks) != 0 {
		t.Fatal("Write delivered synchronously")
	}
	clk.Run(nil)
	if got := s.Times[0]; got != 100*time.Microsecond+1460*8*time.Nanosecond {
		t.Errorf("first segment at %v", got)
	}
	if got := s.Times[len(s.Times)-1]; got != 180*time.Microsecond {
		t.Errorf("last byte at %v, want 180µs", got)
	}
	if len(s.Got) != 10000 || len(s.Chunks) != 7 { // ceil(10000/1460) segments
		t.Errorf("got %d bytes in %d chunks", len(s.Got), len(s.Chunks))
	}
}

func TestSimBackpressure(t *testing.T) {
	clk := clock.NewVirtual()
	a, b := simstream.NewPair(clk, simstream.Config{SendBuffer: 1000})
	writable := 0
	a.SetWritable(func() { writable++ })
	if _, err := a.Write(make([]byte, 5000)); err != nil {
		t.Fatalf("a write into an empty buffer must be accepted whatever its size: %v", err)
	}
	if n, err := a.Write([]byte{1}); n != 0 || !errors.Is(err, stream.ErrWouldBlock) {
		t.Fatalf("Write over the limit: %d, %v; want 0, ErrWouldBlock", n, err)
	}
	if a.Buffered() != 5000 {
		t.Errorf("Buffered = %d", a.Buffered())
	}
	clk.Run(nil)
	if writable != 0 {
		t.Errorf("writable called %d times with no receiver draining", writable)
	}
	// Bytes wait for the receiver, which drains them.
	s := streamtest.NewSink(b, nil)
	clk.Run(nil)
	if len(s.Got) != 5000 || writable != 1 || a.Buffered() != 0 {
		t.Errorf("after SetReceiver: %d bytes delivered, writable %d times, Buffered %d", len(s.Got), writable, a.Buffered())
	}
	if _, err := a.Write(make([]byte, 600)); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Write(make([]byte, 400)); err != nil {
		t.Fatalf("Write up to the limit: %v", err)
	}
	if _, err := a.Write([]byte{1}); !errors.Is(err, stream.ErrWouldBlock) {
		t.Fatalf("Write over the limit: %v", err)
	}
}

func TestSimCorruptAt(t *testing.T) {
	cfg := arbitrary
	cfg.Tamper = simstream.CorruptAt(transport.AtoB, 12345, 0x10)
	r := runSim(t, cfg, 100000, 7000)
	want := bytes.Clone(r.a2b)
	want[12345] ^= 0x10
	streamtest.CheckDelivered(t, "B", r.sb, want, io.EOF)
	streamtest.CheckDelivered(t, "A", r.sa, r.b2a, io.EOF) // the other way is untouched
}

func TestSimResetAt(t *testing.T) {
	for _, off := range []int64{0, 1, 5000, 99999} {
		cfg := arbitrary
		cfg.Reset = &simstream.ResetPoint{Dir: transport.AtoB, Offset: off}
		r := runSim(t, cfg, 100000, 7000)
		streamtest.CheckDelivered(t, "B", r.sb, r.a2b[:off], stream.ErrReset)
		// A learns of the reset from B's RST, unless B's FIN (B wrote all
		// it had and closed) got there first.
		_, closes, err := r.sa.Result()
		if closes != 1 || !errors.Is(err, stream.ErrReset) && !errors.Is(err, io.EOF) {
			t.Errorf("offset %d: A: onClose %d times, %v; want once, ErrReset", off, closes, err)
		}
		if off < 50000 && !errors.Is(err, stream.ErrReset) {
			t.Errorf("offset %d: A: onClose(%v), want ErrReset", off, err)
		}
		for name, c := range map[string]*simstream.Conn{"A": r.a, "B": r.b} {
			if _, err := c.Write([]byte("x")); err == nil {
				t.Errorf("offset %d: %s: Write after the reset succeeded", off, name)
			}
			if err := c.Abort(); err != nil {
				t.Errorf("offset %d: %s: Abort after reset: %v", off, name, err)
			}
		}
	}
}

func TestSimAbort(t *testing.T) {
	clk := clock.NewVirtual()
	a, b := simstream.NewPair(clk, simstream.Config{})
	sa, sb := streamtest.NewSink(a, clk.Now), streamtest.NewSink(b, clk.Now)
	a.Write([]byte("before"))
	clk.Run(nil)
	a.Write([]byte("after, in flight"))
	if err := a.Abort(); err != nil {
		t.Fatal(err)
	}
	if err := a.Abort(); err != nil {
		t.Errorf("second Abort: %v", err)
	}
	if err := a.Close(); err != nil {
		t.Errorf("Close after Abort: %v", err)
	}
	if sa.Closes != 0 {
		t.Fatal("onClose called synchronously from Abort")
	}
	b.Write([]byte("to a dead end"))
	clk.Run(nil)
	streamtest.CheckDelivered(t, "A", sa, nil, stream.ErrAborted)
	// The bytes written before Abort but not yet cut are dropped with it.
	streamtest.CheckDelivered(t, "B", sb, []byte("before"), stream.ErrReset)
	if _, err := b.Write([]byte("x")); !errors.Is(err, stream.ErrReset) {
		t.Errorf("B: Write after reset: %v, want ErrReset", err)
	}
	if _, err := a.Write([]byte("x")); !errors.Is(err, stream.ErrClosed) {
		t.Errorf("A: Write after Abort: %v, want ErrClosed", err)
	}
}

func TestSimHalfClose(t *testing.T) {
	clk := clock.NewVirtual()
	a, b := simstream.NewPair(clk, arbitrary)
	sa, sb := streamtest.NewSink(a, clk.Now), streamtest.NewSink(b, clk.Now)
	a.Write([]byte("request"))
	a.Close()
	a.Close()
	clk.Run(nil)
	streamtest.CheckDelivered(t, "B", sb, []byte("request"), io.EOF)
	// B may still answer A, which keeps receiving after its Close.
	if _, err := b.Write([]byte("response")); err != nil {
		t.Fatalf("Write after the peer's FIN: %v", err)
	}
	b.Close()
	clk.Run(nil)
	streamtest.CheckDelivered(t, "A", sa, []byte("response"), io.EOF)
	if err := a.Abort(); err != nil {
		t.Errorf("Abort after both FINs: %v", err)
	}
}

func TestSimReceiverInstalledLate(t *testing.T) {
	clk := clock.NewVirtual()
	a, b := simstream.NewPair(clk, simstream.Config{})
	a.Write([]byte("early"))
	a.Close()
	clk.Run(nil)
	s := streamtest.NewSink(b, nil)
	if len(s.Got) != 0 {
		t.Fatal("SetReceiver delivered synchronously")
	}
	clk.Run(nil)
	streamtest.CheckDelivered(t, "B", s, []byte("early"), io.EOF)
}

func TestSimConfigValidate(t *testing.T) {
	for _, c := range []simstream.Config{
		{Latency: -1}, {MSS: -1}, {Chop: 1.5}, {Chop: -0.1}, {Coalesce: -1}, {SendBuffer: -1},
		{Reset: &simstream.ResetPoint{Offset: -1}},
	} {
		if c.Validate() == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("NewPair accepted an invalid config")
		}
	}()
	simstream.NewPair(clock.NewVirtual(), simstream.Config{Chop: 2})
}
