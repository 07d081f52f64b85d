package tap

import (
	"bytes"
	"errors"
	"os"
	"testing"
	"time"
)

func TestFramePipe(t *testing.T) {
	a, b := NewFramePipe()
	defer a.Close()
	defer b.Close()
	in := []byte{1, 2, 3, 4, 5}
	if err := a.WriteFrame(in); err != nil {
		t.Fatal(err)
	}
	in[0] = 9 // the pipe copied
	buf := make([]byte, 3)
	n, err := b.ReadFrame(buf)
	if err != nil || n != 3 || !bytes.Equal(buf, []byte{1, 2, 3}) {
		t.Errorf("read %d %x %v: want the first 3 bytes of the original frame (truncated)", n, buf[:n], err)
	}
	// The other direction.
	b.WriteFrame([]byte{7})
	if n, err := a.ReadFrame(buf); err != nil || n != 1 || buf[0] != 7 {
		t.Errorf("read back %d %v", n, err)
	}
}

func TestFramePipeCloseUnblocksRead(t *testing.T) {
	a, b := NewFramePipe()
	done := make(chan error, 1)
	go func() {
		_, err := a.ReadFrame(make([]byte, 10))
		done <- err
	}()
	a.Close()
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrClosed) {
			t.Errorf("ReadFrame after Close: %v, want os.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not unblock ReadFrame")
	}
	if err := a.WriteFrame([]byte{1}); !errors.Is(err, os.ErrClosed) {
		t.Errorf("WriteFrame after Close: %v", err)
	}
	if err := a.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	// Writing towards a closed end is a frame lost on the wire, not an error.
	if err := b.WriteFrame([]byte{1}); err != nil {
		t.Errorf("write to a closed peer: %v", err)
	}
	b.Close()
}

func TestHostCloseStopsReader(t *testing.T) {
	h, w := newTestHost(t, false)
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.readerEnd:
	default:
		t.Fatal("Close returned before the reader stopped")
	}
	// Sends after Close fail; the wire end sees the close of the host's IO.
	if err := h.SendIP(make([]byte, 40)); err == nil {
		t.Error("SendIP after Close succeeded")
	}
	if _, ok := h.Lookup(peer4); ok {
		t.Error("Lookup after Close hit")
	}
	_ = w
}
