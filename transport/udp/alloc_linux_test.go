// The per-frame paths allocate nothing once warm: pooled send scratch,
// preallocated receive buffers, headers written in place.

package udp

import "testing"

// TestSteadyStateAllocs counts the allocations of the whole process (sender
// and receive loop) per frame sent and received, also with receive
// timestamps read by the receiver.
func TestSteadyStateAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	for _, c := range []struct{ v6, stamps bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		v6 := c.v6
		a, b := openPair(t, v6, func(cfg *Config) { cfg.RecvTimestamps = c.stamps })
		arrived := make(chan struct{}, 64)
		b.SetBatchReceiver(func(frames [][]byte) {
			if c.stamps && b.Arrival().IsZero() {
				t.Error("no Arrival with RecvTimestamps")
			}
			for range frames {
				arrived <- struct{}{}
			}
		})
		frame := roceFrame(a, b, frameOpts{payload: make([]byte, 1024)})
		batch := [][]byte{frame, frame, frame, frame}
		one := func() {
			if err := a.Send(frame); err != nil {
				t.Fatal(err)
			}
			<-arrived
		}
		four := func() {
			if err := a.SendBatch(batch); err != nil {
				t.Fatal(err)
			}
			for range batch {
				<-arrived
			}
		}
		for range 100 {
			one()
			four()
		}
		if n := testing.AllocsPerRun(1000, one); n != 0 {
			t.Errorf("v6=%v stamps=%v: %v allocations per frame through Send", v6, c.stamps, n)
		}
		if n := testing.AllocsPerRun(250, four); n != 0 {
			t.Errorf("v6=%v stamps=%v: %v allocations per 4 frames through SendBatch", v6, c.stamps, n)
		}
	}
}
