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
