package transport_test

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/rnic/rnic/transport"
)

func TestPipe(t *testing.T) {
	a, b := transport.NewPipe()
	defer a.Close()
	var mu sync.Mutex
	var got [][]byte
	done := make(chan struct{})
	b.SetReceiver(func(f []byte) {
		mu.Lock()
		got = append(got, append([]byte(nil), f...))
		if len(got) == 100 {
			close(done)
		}
		mu.Unlock()
	})
	frame := make([]byte, 64)
	for i := 0; i < 100; i++ {
		frame[0] = byte(i)
		if err := a.Send(frame); err != nil {
			t.Fatal(err)
		}
	}
	frame[0] = 0xFF // Send copied: this must not show
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("frames did not arrive")
	}
	mu.Lock()
	defer mu.Unlock()
	for i, f := range got {
		if f[0] != byte(i) || !bytes.Equal(f[1:], make([]byte, 63)) {
			t.Fatalf("frame %d arrived as %x", i, f[:4])
		}
	}
	if err := a.Send(nil); err != transport.ErrEmptyFrame {
		t.Fatalf("empty frame: %v", err)
	}
	b.Close()
	if err := a.Send(frame); err != nil {
		t.Fatalf("send to a closed peer: %v (it is dropped)", err)
	}
	a.Close()
	if err := a.Send(frame); err != transport.ErrClosed {
		t.Fatalf("send after close: %v", err)
	}
}

// TestPipeBacklog: a frame is on its way until its receiver returns; a
// frame queued towards an end that closed will never arrive and counts
// as done.
func TestPipeBacklog(t *testing.T) {
	a, b := transport.NewPipe()
	defer a.Close()
	gate, got := make(chan struct{}), make(chan struct{}, 4)
	b.SetReceiver(func([]byte) {
		<-gate
		got <- struct{}{}
	})
	for range 2 {
		if err := a.Send([]byte{1}); err != nil {
			t.Fatal(err)
		}
	}
	out, in := a.Backlog()
	if out.Sent != 2 || out.Done != 0 || in != (transport.Flow{}) {
		t.Fatalf("two frames held at the receiver: out %+v in %+v", out, in)
	}
	if bin, _ := b.Backlog(); bin != (transport.Flow{}) {
		t.Errorf("b's own sends: %+v", bin)
	}
	gate <- struct{}{}
	<-got
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		if out, _ = a.Backlog(); out.Done == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("one frame delivered: out %+v", out)
		}
	}
	b.Close()
	close(gate)
	if out, _ = a.Backlog(); out.Done != out.Sent {
		t.Errorf("frames towards a closed end still counted on their way: %+v", out)
	}
}
