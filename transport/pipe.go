// Pipe: an in-process link on the real clock.
//
// Two NICs in one process, each delivering what the other sends on a
// goroutine of its own, in order, with no kernel in between. It is the
// real-time counterpart of the simulated link: no virtual clock to drive,
// no faults, just a wire. Tests of the tools (demo, pingpong, perf) use it
// to run whole NICs without sockets.

package transport

import (
	"sync"
	"sync/atomic"
)

// pipeDepth bounds the frames in flight towards one end; a sender waits
// when it is full, as a NIC waits for a busy wire.
const pipeDepth = 4096

// PipeEnd is one end of a pipe.
type PipeEnd struct {
	mu     sync.Mutex
	recv   func([]byte)
	peer   *PipeEnd
	ch     chan []byte
	done   chan struct{}
	closed bool

	// queued counts the frames sent towards this end, delivered those
	// its receiver has returned from (Backlog).
	queued, delivered atomic.Uint64
}

// NewPipe returns the two connected ends of a pipe. Each end runs one
// goroutine that calls its receiver, which therefore sees its frames one at
// a time, in the order they were sent.
func NewPipe() (a, b *PipeEnd) {
	a = &PipeEnd{ch: make(chan []byte, pipeDepth), done: make(chan struct{})}
	b = &PipeEnd{ch: make(chan []byte, pipeDepth), done: make(chan struct{})}
	a.peer, b.peer = b, a
	go a.loop()
	go b.loop()
	return a, b
}

func (e *PipeEnd) loop() {
	for {
		select {
		case f := <-e.ch:
			e.mu.Lock()
			r := e.recv
			e.mu.Unlock()
			if r != nil {
				r(f)
			}
			e.delivered.Add(1)
		case <-e.done:
			return
		}
	}
}

// Send implements Endpoint. A frame sent after this end closed is refused;
// one sent to a closed peer is dropped, as a wire to a dead NIC drops it.
func (e *PipeEnd) Send(frame []byte) error {
	if len(frame) == 0 {
		return ErrEmptyFrame
	}
	select {
	case <-e.done:
		return ErrClosed
	default:
	}
	e.peer.queued.Add(1)
	select {
	case e.peer.ch <- append([]byte(nil), frame...):
	case <-e.peer.done:
		e.peer.delivered.Add(1) // dropped: it will never be delivered
	}
	return nil
}

// Backlog implements Backlogger. Frames queued towards an end that closed
// count as done: they will never be delivered, and a timer waiting for
// them must count its timeouts.
func (e *PipeEnd) Backlog() (out, in Flow) {
	return e.peer.flow(), e.flow()
}

// flow is the traffic towards e.
func (e *PipeEnd) flow() Flow {
	sent := e.queued.Load()
	select {
	case <-e.done:
		return Flow{Sent: sent, Done: sent}
	default:
	}
	return Flow{Sent: sent, Done: e.delivered.Load()}
}

// SetReceiver implements Endpoint.
func (e *PipeEnd) SetReceiver(r func([]byte)) {
	e.mu.Lock()
	e.recv = r
	e.mu.Unlock()
}

// Close implements Endpoint: the end stops delivering; closing twice is
// harmless.
func (e *PipeEnd) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.closed {
		e.closed = true
		close(e.done)
	}
	return nil
}
