// Loopback: a frame to one of the host's own addresses never reaches the
// TAP. A real RNIC turns such traffic around inside the adapter (two QPs
// on one port talk to each other with the port's own GID, as rnicd's
// clients do), and the kernel does the same for its own addresses. Here the
// send path hands a copy of the frame, addressed from and to our MAC, to a
// loopback goroutine that feeds it to the receive path exactly like a frame
// read from the TAP: it appears once in the pcap (as received), and the
// RoCE and TCP receivers see it on their usual path.
//
// The hand-over never blocks: a receiver may send from inside its receive
// call (an ACK, a READ response), and a blocking queue between that send
// and the goroutine waiting to deliver would deadlock. A full queue drops
// the frame and counts it, as a congested port would; RC retransmits.

package tap

import "sync"

// loopQueueLen is the loopback queue's depth: a burst of a 64 KiB message
// at path MTU 256 fits.
const loopQueueLen = 512

type loopback struct {
	q    chan *[]byte
	done chan struct{}
	end  chan struct{} // closed when the goroutine returns
	bufs sync.Pool     // *[]byte of frameLen bytes
	once sync.Once
}

func (l *loopback) init(frameLen int) {
	l.q = make(chan *[]byte, loopQueueLen)
	l.done = make(chan struct{})
	l.end = make(chan struct{})
	l.bufs.New = func() any { b := make([]byte, frameLen); return &b }
}

// stop ends the goroutine (if it was started) and waits for it.
func (l *loopback) stop(started bool) {
	l.once.Do(func() { close(l.done) })
	if started {
		<-l.end
	}
}

// loopOut turns frame (a whole Ethernet frame to one of our addresses)
// around. It copies frame; the caller keeps it.
func (h *Host) loopOut(frame []byte) error {
	if h.isClosed() {
		return ErrHostClosed
	}
	if len(frame) < ethHeaderLen {
		h.cnt.malformed.Add(1)
		return ErrBadFrame
	}
	bp := h.loop.bufs.Get().(*[]byte)
	if len(frame) > cap(*bp) {
		h.loop.bufs.Put(bp)
		h.cnt.tooBig.Add(1)
		return ErrFrameTooBig
	}
	*bp = (*bp)[:len(frame)]
	f := *bp
	copy(f, frame)
	copy(f[0:6], h.mac[:])
	copy(f[6:12], h.mac[:])
	select {
	case h.loop.q <- bp:
		h.cnt.loopbackFrames.Add(1)
	default:
		h.loop.bufs.Put(bp)
		h.cnt.loopbackDropped.Add(1)
	}
	return nil
}

// loopLoop delivers looped frames until the host closes.
func (h *Host) loopLoop() {
	defer close(h.loop.end)
	for {
		select {
		case <-h.loop.done:
			return
		case bp := <-h.loop.q:
			h.rxMu.Lock()
			h.handleFrame(*bp)
			h.rxMu.Unlock()
			*bp = (*bp)[:cap(*bp)]
			h.loop.bufs.Put(bp)
		}
	}
}
