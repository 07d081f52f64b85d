package tap

import (
	"bytes"
	"testing"
	"time"

	"github.com/rnic/rnic/roce/wire"
)

// TestLoopback: RoCE frames to the host's own addresses (IPv4 and IPv6)
// come back on its receiver, from and to its MAC, and never reach the wire;
// a receiver that answers itself from inside the receive call (as an RC
// responder ACKs) does not deadlock.
func TestLoopback(t *testing.T) {
	h, w := newTestHost(t, false)
	got := make(chan []byte, 16)
	var echoed bool
	h.RoCE().SetReceiver(func(f []byte) {
		got <- bytes.Clone(f)
		if !echoed { // answer once, from inside the receiver
			echoed = true
			if err := h.RoCE().Send(f); err != nil {
				t.Errorf("send from the receiver: %v", err)
			}
		}
	})
	f4 := roceFrame(t, hostMAC, [6]byte{}, host4, host4, 0, []byte("to myself"))
	f6 := roceFrame(t, hostMAC, [6]byte{}, host6, host6, 0, []byte("to myself, v6"))
	for i, f := range [][]byte{f4, f6} {
		if err := h.RoCE().Send(f); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		want := 1
		if i == 0 {
			want = 2 // and the receiver's answer
		}
		for range want {
			select {
			case r := <-got:
				if !bytes.Equal(r[0:6], hostMAC[:]) || !bytes.Equal(r[6:12], hostMAC[:]) || !bytes.Equal(r[12:], f[12:]) {
					t.Errorf("looped frame %x, want %x with our MAC both ways", r, f)
				}
				var fr wire.Frame
				if err := fr.Decode(r, 0); err != nil || !fr.VerifyICRC() {
					t.Errorf("looped frame does not decode: %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("frame %d not looped back", i)
			}
		}
	}
	w.barrier() // nothing of the above went out on the wire
	c := h.Counters()
	if c.LoopbackFrames != 3 || c.LoopbackDropped != 0 || c.RoCERx != 3 || c.NoRoute != 0 {
		t.Errorf("loopback_frames %d loopback_dropped %d roce_rx %d no_route %d", c.LoopbackFrames, c.LoopbackDropped, c.RoCERx, c.NoRoute)
	}
}

// TestLoopbackFullQueue: with the receive path held up, sends to ourselves
// beyond the queue are dropped and counted, not blocked.
func TestLoopbackFullQueue(t *testing.T) {
	h, w := newTestHost(t, false)
	h.RoCE().SetReceiver(func([]byte) {})
	f := roceFrame(t, hostMAC, [6]byte{}, host4, host4, 0, nil)
	h.rxMu.Lock() // the receive path is busy
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range loopQueueLen + 10 {
			if err := h.RoCE().Send(f); err != nil {
				t.Errorf("send: %v", err)
				return
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("sends to ourselves blocked on a full loopback queue")
	}
	h.rxMu.Unlock()
	w.barrier()
	c := h.Counters()
	// The loopback goroutine may hold one frame out of the queue while it
	// waits for the receive path, so 10 or 9 are dropped.
	if c.LoopbackDropped < 9 || c.LoopbackDropped > 10 || c.LoopbackFrames+c.LoopbackDropped != loopQueueLen+10 {
		t.Errorf("loopback_frames %d loopback_dropped %d", c.LoopbackFrames, c.LoopbackDropped)
	}
}
