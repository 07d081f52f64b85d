// Copies of what a work request points to. verbs lets the caller reuse a
// WR, its SGE array and its inline buffer as soon as the post returns, so
// nic copies them; the engine may keep the copy as long as it needs (until
// the WQE retires), which nic cannot observe. The copies are carved from
// chunks so that a post costs an allocation only once per chunk; the
// garbage collector frees a chunk when no WQE refers to it any more.
// A slab is not safe for concurrent use: each belongs to one work queue and
// is used under that queue's lock.

package nic

import "github.com/rnic/rnic/nic/verbs"

const (
	sgeChunk    = 256
	sendWRChunk = 64
	inlineChunk = 4096
)

type slab struct {
	sges   []verbs.SGE
	wrs    []verbs.SendWR
	inline []byte
}

// sgl returns a copy of src, or nil if it is empty.
func (s *slab) sgl(src []verbs.SGE) []verbs.SGE {
	if len(src) == 0 {
		return nil
	}
	if len(src) > len(s.sges) {
		s.sges = make([]verbs.SGE, max(sgeChunk, len(src)))
	}
	dst := s.sges[:len(src):len(src)]
	s.sges = s.sges[len(src):]
	copy(dst, src)
	return dst
}

// bytes returns a zeroed n-byte buffer, non-nil even when n is 0 (a
// non-nil Inline marks an inline WR).
func (s *slab) bytes(n int) []byte {
	if n > len(s.inline) {
		if n > inlineChunk/4 {
			return make([]byte, n)
		}
		s.inline = make([]byte, inlineChunk)
	}
	b := s.inline[:n:n]
	s.inline = s.inline[n:]
	return b
}

// sendWR returns a fresh SendWR.
func (s *slab) sendWR() *verbs.SendWR {
	if len(s.wrs) == 0 {
		s.wrs = make([]verbs.SendWR, sendWRChunk)
	}
	w := &s.wrs[0]
	s.wrs = s.wrs[1:]
	return w
}
