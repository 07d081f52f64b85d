package pingpong

import "sync"

// pipeEnd is one end of an in-process link that delivers frames on a
// goroutine, in order, like a wire with a real clock (nic/demo's test
// helper).
type pipeEnd struct {
	mu     sync.Mutex
	recv   func([]byte)
	peer   *pipeEnd
	ch     chan []byte
	done   chan struct{}
	closed bool
}

func newPipe() (*pipeEnd, *pipeEnd) {
	a := &pipeEnd{ch: make(chan []byte, 4096), done: make(chan struct{})}
	b := &pipeEnd{ch: make(chan []byte, 4096), done: make(chan struct{})}
	a.peer, b.peer = b, a
	for _, e := range []*pipeEnd{a, b} {
		go e.loop()
	}
	return a, b
}

func (e *pipeEnd) loop() {
	for {
		select {
		case f := <-e.ch:
			e.mu.Lock()
			r := e.recv
			e.mu.Unlock()
			if r != nil {
				r(f)
			}
		case <-e.done:
			return
		}
	}
}

// Send drops the frame when the peer has closed, as a wire to a dead NIC.
func (e *pipeEnd) Send(f []byte) error {
	select {
	case e.peer.ch <- append([]byte(nil), f...):
	case <-e.peer.done:
	}
	return nil
}

func (e *pipeEnd) SetReceiver(r func([]byte)) {
	e.mu.Lock()
	e.recv = r
	e.mu.Unlock()
}

func (e *pipeEnd) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.closed {
		e.closed = true
		close(e.done)
	}
	return nil
}
