// Receive timestamps (Config.RecvTimestamps, Endpoint.Arrival): the time a
// receiver is told is when the datagram reached the host, not when the
// receive loop got round to handing it over.

package udp

import (
	"testing"
	"time"
)

// arrivalSeen is what a receiver saw of one frame.
type arrivalSeen struct {
	arrival, called time.Time
}

// lateReceiver installs on ep a receiver that reports each frame's
// Arrival and the time of its call, and holds up the first call until
// release is closed, so that the frames after it wait for the receive
// loop. started is closed when the first call begins.
func lateReceiver(ep *Endpoint, release <-chan struct{}) (seen <-chan arrivalSeen, started <-chan struct{}) {
	ch, st := make(chan arrivalSeen, 16), make(chan struct{})
	first := true
	ep.SetReceiver(func([]byte) {
		s := arrivalSeen{arrival: ep.Arrival()}
		if first {
			first = false
			close(st)
			<-release
		}
		s.called = time.Now()
		ch <- s
	})
	return ch, st
}

// waitSeen returns the next frame a lateReceiver saw.
func waitSeen(t *testing.T, seen <-chan arrivalSeen) arrivalSeen {
	t.Helper()
	select {
	case s := <-seen:
		return s
	case <-time.After(5 * time.Second):
		t.Fatal("no frame arrived")
		return arrivalSeen{}
	}
}

// TestArrivalIsKernelTime: a frame sent while the receiver is busy with
// the previous one is handed over late, yet its Arrival lies between
// just before and just after its Send: the kernel's time, not the time of
// the hand-over (which is held back by >= 30 ms). Over the kernel and
// through the in-process loopback (where the time is when it was
// queued), both families.
func TestArrivalIsKernelTime(t *testing.T) {
	const hold = 30 * time.Millisecond
	// The kernel's stamp and time.Now read one clock; the slack only
	// absorbs rounding.
	const slack = 200 * time.Microsecond
	for _, loop := range []bool{false, true} {
		for _, v6 := range []bool{false, true} {
			a, b := openPair(t, v6, func(c *Config) { c.RecvTimestamps, c.Loopback = true, loop })
			release := make(chan struct{})
			seen, started := lateReceiver(b, release)
			frame := roceFrame(a, b, frameOpts{payload: make([]byte, 64)})
			if err := a.Send(frame); err != nil {
				t.Fatal(err)
			}
			select {
			case <-started:
			case <-time.After(5 * time.Second):
				t.Fatal("the first frame did not arrive")
			}
			before := time.Now()
			if err := a.Send(frame); err != nil {
				t.Fatal(err)
			}
			after := time.Now()
			time.Sleep(hold)
			close(release)
			first, second := waitSeen(t, seen), waitSeen(t, seen)
			if first.arrival.IsZero() || second.arrival.IsZero() {
				t.Fatalf("loop=%v v6=%v: no Arrival (%v, %v)", loop, v6, first.arrival, second.arrival)
			}
			if !first.arrival.Before(second.arrival) {
				t.Errorf("loop=%v v6=%v: arrivals out of order: %v, then %v", loop, v6, first.arrival, second.arrival)
			}
			at := second.arrival
			if at.Before(before.Add(-slack)) || at.After(after.Add(slack)) {
				t.Errorf("loop=%v v6=%v: second frame's Arrival %v outside its Send [%v, %v]",
					loop, v6, at, before, after)
			}
			// The hand-over itself was late: what Arrival must not be.
			if late := second.called.Sub(after); late < hold {
				t.Errorf("loop=%v v6=%v: second frame handed over %v after its Send, want >= %v (the test did not hold the receiver up)",
					loop, v6, late, hold)
			}
			a.Close()
			b.Close()
		}
	}
}

// TestArrivalBatch: a batch receiver's Arrival is the batch's first
// frame's.
func TestArrivalBatch(t *testing.T) {
	a, b := openPair(t, false, func(c *Config) { c.RecvTimestamps = true })
	got := make(chan time.Time, 4)
	b.SetBatchReceiver(func(frames [][]byte) { got <- b.Arrival() })
	before := time.Now()
	if err := a.Send(roceFrame(a, b, frameOpts{payload: make([]byte, 64)})); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	select {
	case at := <-got:
		if at.Before(before) || at.After(after) {
			t.Errorf("batch Arrival %v outside the Send [%v, %v]", at, before, after)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no frame arrived")
	}
}

// TestArrivalOff: without RecvTimestamps the endpoint knows no times.
func TestArrivalOff(t *testing.T) {
	for _, loop := range []bool{false, true} {
		a, b := openPair(t, false, func(c *Config) { c.Loopback = loop })
		got := make(chan time.Time, 1)
		b.SetReceiver(func([]byte) { got <- b.Arrival() })
		if err := a.Send(roceFrame(a, b, frameOpts{payload: make([]byte, 64)})); err != nil {
			t.Fatal(err)
		}
		select {
		case at := <-got:
			if !at.IsZero() {
				t.Errorf("loop=%v: Arrival %v without RecvTimestamps, want zero", loop, at)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no frame arrived")
		}
		a.Close()
		b.Close()
	}
}
