// Tests of the WithFaults decorator: it makes the same decisions as the
// simulated link for the same seed, applies scripts both ways, and keeps
// in-order frames in order under a real clock with concurrent timers.

package transport_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rnic/rnic/transport"
	"github.com/rnic/rnic/transport/clock"
)

// lostIDs sends n frames on a and returns the ids that never reached b.
func lostIDs(clk *clock.Virtual, a, b transport.Endpoint, n int) []uint32 {
	arrived := map[uint32]bool{}
	b.SetReceiver(func(f []byte) { arrived[frameID(f)] = true })
	for i := range n {
		_ = a.Send(mkFrame(uint32(i), 64))
	}
	clk.Run(nil)
	var lost []uint32
	for i := range uint32(n) {
		if !arrived[i] {
			lost = append(lost, i)
		}
	}
	return lost
}

func TestWithFaultsMatchesSimLink(t *testing.T) {
	f := transport.Faults{Loss: 0.3}
	clk1 := clock.NewVirtual()
	a1, b1 := transport.NewSimLink(clk1, transport.SimConfig{Seed: 11, Faults: transport.FaultConfig{AtoB: f}})
	want := lostIDs(clk1, a1, b1, 200)

	clk2 := clock.NewVirtual()
	a2, b2 := transport.NewSimLink(clk2, transport.SimConfig{})
	fa := transport.WithFaults(a2, clk2, transport.FaultConfig{Seed: 11, AtoB: f})
	got := lostIDs(clk2, fa, b2, 200)

	if len(want) < 30 || !slices.Equal(got, want) {
		t.Errorf("sim link lost %v\nWithFaults lost %v", want, got)
	}
	if st := fa.Stats(transport.AtoB); st.Dropped != uint64(len(got)) || st.Delivered != 200-st.Dropped {
		t.Errorf("stats = %+v", st)
	}
}

func TestWithFaultsScriptBothWays(t *testing.T) {
	clk := clock.NewVirtual()
	a, b := transport.NewSimLink(clk, transport.SimConfig{})
	fa := transport.WithFaults(a, clk, transport.FaultConfig{Script: func(dir transport.Direction, i int, _ []byte) transport.Verdict {
		switch {
		case dir == transport.AtoB && i == 1:
			return transport.Drop()
		case dir == transport.BtoA && i == 0:
			return transport.Duplicate()
		case dir == transport.BtoA && i == 1:
			return transport.Delay(3 * time.Microsecond)
		}
		return transport.Pass()
	}})
	atB := recorder(clk, b)
	atA := recorder(clk, fa)
	for i := range 3 {
		_ = fa.Send(mkFrame(uint32(i), 64))
		_ = b.Send(mkFrame(uint32(100+i), 64))
	}
	clk.Run(nil)

	var idsB, idsA []uint32
	for _, g := range *atB {
		idsB = append(idsB, g.id())
	}
	for _, g := range *atA {
		idsA = append(idsA, g.id())
	}
	if !slices.Equal(idsB, []uint32{0, 2}) {
		t.Errorf("b received %v, want [0 2]", idsB)
	}
	if !slices.Equal(idsA, []uint32{100, 100, 102, 101}) {
		t.Errorf("a received %v, want [100 100 102 101]", idsA)
	}
	if last := (*atA)[3]; last.at != transport.DefaultLatency+3*time.Microsecond {
		t.Errorf("delayed frame arrived at %v", last.at)
	}
	out, in := fa.Stats(transport.AtoB), fa.Stats(transport.BtoA)
	checkConservation(t, "out", out)
	checkConservation(t, "in", in)
	if out.Dropped != 1 || in.Duplicated != 1 || in.Delayed != 1 {
		t.Errorf("out %+v, in %+v", out, in)
	}
	if err := fa.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fa.Send(mkFrame(9, 64)); err == nil {
		t.Error("Send after Close succeeded")
	}
}

// goEndpoint is a test Endpoint whose deliveries run on a goroutine, like a
// kernel socket's reader: it exercises WithFaults under real concurrency.
type goEndpoint struct {
	mu   sync.Mutex
	recv func([]byte)
	ch   chan []byte
	done chan struct{}
}

func newGoPair() (a, b *goEndpoint) {
	a = &goEndpoint{ch: make(chan []byte, 1024), done: make(chan struct{})}
	b = &goEndpoint{ch: a.ch, done: make(chan struct{})}
	go func() {
		defer close(b.done)
		for f := range a.ch {
			b.mu.Lock()
			r := b.recv
			b.mu.Unlock()
			if r != nil {
				r(f)
			}
		}
	}()
	return a, b
}

func (e *goEndpoint) Send(f []byte) error { e.ch <- slices.Clone(f); return nil }
func (e *goEndpoint) SetReceiver(r func([]byte)) {
	e.mu.Lock()
	e.recv = r
	e.mu.Unlock()
}
func (e *goEndpoint) Close() error { return nil }

func TestWithFaultsRealClockKeepsOrder(t *testing.T) {
	a, b := newGoPair()
	clk := clock.NewReal()
	stall := transport.Faults{Delay: 0.2, DelayMin: 50 * time.Microsecond, DelayMax: 300 * time.Microsecond}
	fa := transport.WithFaults(a, clk, transport.FaultConfig{Seed: 5, AtoB: stall})
	fb := transport.WithFaults(b, clk, transport.FaultConfig{Seed: 6, BtoA: stall})

	const n = 500
	var mu sync.Mutex
	var got []uint32
	all := make(chan struct{})
	fb.SetReceiver(func(f []byte) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, frameID(f))
		if len(got) == n {
			close(all)
		}
	})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range n {
			if err := fa.Send(mkFrame(uint32(i), 64)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	select {
	case <-all:
	case <-time.After(20 * time.Second):
		t.Fatal("frames did not all arrive")
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for i, id := range got {
		if id != uint32(i) {
			t.Fatalf("arrival %d is frame %d: order-preserving delay reordered", i, id)
		}
	}
	if fa.Stats(transport.AtoB).Delayed == 0 || fb.Stats(transport.BtoA).Delayed == 0 {
		t.Error("no delay was injected")
	}
	close(a.ch)
	<-b.done
}
