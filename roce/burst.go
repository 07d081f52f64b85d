package roce

import "sync"

// burstBuf holds the frames of one burst (see beginBatch): maxBatch slots
// of maxFrame bytes and the list of frames built in them. A QP borrows one
// from its stack for the length of a burst, so the ~140 KB it takes are
// owned by the bursts in flight, not by every QP that ever sent one.
type burstBuf struct {
	arena  []byte
	frames [][]byte
}

// burstPool is the stack's supply of burst buffers.
type burstPool struct{ p sync.Pool }

func (s *Stack) getBurst() *burstBuf {
	if b, ok := s.bursts.p.Get().(*burstBuf); ok {
		return b
	}
	return &burstBuf{arena: make([]byte, maxBatch*maxFrame), frames: make([][]byte, 0, maxBatch)}
}

func (s *Stack) putBurst(b *burstBuf) {
	clear(b.frames)
	b.frames = b.frames[:0]
	s.bursts.p.Put(b)
}
