package roce

import "sync"

// The frame buffers a QP sends from are lent by its stack for as long as a
// frame or a burst is being built and sent, so memory for frames grows with
// the sends in progress, not with the QP count.
//
// The stack keeps returned buffers on free lists of its own, not in a
// sync.Pool: a pool drops buffers at every GC (and at random under the race
// detector), and the send path must not allocate in the steady state.

// burstBuf holds the frames of one burst (see beginBatch): maxBatch slots
// of maxFrame bytes and the list of frames built in them. A QP borrows one
// from its stack for the length of a burst, so the ~140 KB it takes are
// owned by the bursts in flight, not by every QP that ever sent one.
type burstBuf struct {
	arena  []byte
	frames [][]byte
}

// txBuf is the room of one frame sent alone.
type txBuf [maxFrame]byte

// Most buffers a stack keeps for reuse; more go to the garbage collector.
const (
	keepBursts = 8
	keepTx     = 64
)

// burstPool is the stack's supply of burst buffers and of single-frame
// transmit buffers.
type burstPool struct {
	mu     sync.Mutex
	bursts []*burstBuf
	tx     []*txBuf
}

func (s *Stack) getBurst() *burstBuf {
	p := &s.bursts
	p.mu.Lock()
	if n := len(p.bursts); n > 0 {
		b := p.bursts[n-1]
		p.bursts[n-1] = nil
		p.bursts = p.bursts[:n-1]
		p.mu.Unlock()
		return b
	}
	p.mu.Unlock()
	return &burstBuf{arena: make([]byte, maxBatch*maxFrame), frames: make([][]byte, 0, maxBatch)}
}

func (s *Stack) putBurst(b *burstBuf) {
	clear(b.frames)
	b.frames = b.frames[:0]
	p := &s.bursts
	p.mu.Lock()
	if len(p.bursts) < keepBursts {
		p.bursts = append(p.bursts, b)
	}
	p.mu.Unlock()
}

func (s *Stack) getTx() *txBuf {
	p := &s.bursts
	p.mu.Lock()
	if n := len(p.tx); n > 0 {
		b := p.tx[n-1]
		p.tx[n-1] = nil
		p.tx = p.tx[:n-1]
		p.mu.Unlock()
		return b
	}
	p.mu.Unlock()
	return new(txBuf)
}

func (s *Stack) putTx(b *txBuf) {
	p := &s.bursts
	p.mu.Lock()
	if len(p.tx) < keepTx {
		p.tx = append(p.tx, b)
	}
	p.mu.Unlock()
}
