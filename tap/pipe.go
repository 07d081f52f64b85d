// FramePipe: two FrameIO ends joined by an in-memory wire, so that tests
// can put a Host on "the wire" and play every other host on it themselves,
// without a TAP device or root.

package tap

import (
	"fmt"
	"os"
	"sync"
)

// framePipeDepth bounds the frames in flight towards one end; a writer
// waits when it is full, as a NIC waits for a busy wire.
const framePipeDepth = 1024

// framePipeEnd is one end of a NewFramePipe.
type framePipeEnd struct {
	in   chan []byte   // frames written by the peer, to be read here
	peer *framePipeEnd // where our writes go
	done chan struct{} // closed by Close
	once sync.Once
}

// NewFramePipe returns two connected FrameIO ends: a frame written on one
// is read, as a copy, on the other, in order. Close on an end makes its
// ReadFrame and WriteFrame return an error wrapping os.ErrClosed; frames
// written towards a closed end are dropped, as a wire to a dead NIC drops
// them.
func NewFramePipe() (a, b FrameIO) {
	x := &framePipeEnd{in: make(chan []byte, framePipeDepth), done: make(chan struct{})}
	y := &framePipeEnd{in: make(chan []byte, framePipeDepth), done: make(chan struct{})}
	x.peer, y.peer = y, x
	return x, y
}

// ReadFrame implements FrameIO.
func (e *framePipeEnd) ReadFrame(b []byte) (int, error) {
	// A closed end reports the close even if frames are still queued, as a
	// closed file descriptor would.
	select {
	case <-e.done:
		return 0, fmt.Errorf("tap: frame pipe: %w", os.ErrClosed)
	default:
	}
	select {
	case f := <-e.in:
		return copy(b, f), nil
	case <-e.done:
		return 0, fmt.Errorf("tap: frame pipe: %w", os.ErrClosed)
	}
}

// WriteFrame implements FrameIO.
func (e *framePipeEnd) WriteFrame(b []byte) error {
	select {
	case <-e.done:
		return fmt.Errorf("tap: frame pipe: %w", os.ErrClosed)
	default:
	}
	f := append([]byte(nil), b...)
	select {
	case e.peer.in <- f:
	case <-e.peer.done:
	case <-e.done:
		return fmt.Errorf("tap: frame pipe: %w", os.ErrClosed)
	}
	return nil
}

// Close implements FrameIO; closing twice is harmless.
func (e *framePipeEnd) Close() error {
	e.once.Do(func() { close(e.done) })
	return nil
}
