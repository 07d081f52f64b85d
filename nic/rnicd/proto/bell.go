// The session doorbell: one wake-up socket and one small shared
// memory area per session, instead of a descriptor per QP and SRQ, so the
// descriptors of a session do not grow with its objects (a daemon serving
// 10,000 QPs would otherwise need 10,000 descriptors, and a C program as
// many beyond its soft limit of 1024).
//
// The area is a two-level bitmap of bells, little-endian uint64 words:
//
//	offset  words            field
//	0       BellSummaryWords summary: bit j of word i says leaf word
//	                         64·i + j may have bits set
//	128     BellLeafWords    leaves: bit j of word k is bell 64·k + j
//
// A work ring names its bell (offset 448 of its header). A client whose
// drainer sleeps (the handshake in ring.go) sets the bell's leaf bit, then
// its summary bit (atomic OR: any number of client threads ring at once),
// then sends a byte on the session's socket, without waiting (a full
// socket already wakes the daemon). The daemon, woken, reads the bytes
// there, swaps each summary word with 0 and each leaf word a set summary
// bit names with 0, and wakes the drainers of the bells it found. A bit
// set after the daemon swapped its summary word sets the summary bit
// again and sends a byte again, after the daemon's read, so no ring is
// lost; a summary bit whose leaf was already taken costs one look at an
// empty word. Finding the rung bells costs BellSummaryWords loads plus
// one per rung leaf word, whatever the number of objects.

package proto

import (
	"fmt"
	"math/bits"
	"sync/atomic"
	"unsafe"
)

// Session doorbell geometry.
//
//rnicd:cheader
const (
	BellSummaryWords = 16
	BellLeafWords    = BellSummaryWords * 64
	// MaxBells is how many QPs and SRQs a session may hold.
	MaxBells = BellLeafWords * 64
	// BellAreaLen is the size of the session doorbell memory.
	BellAreaLen = (BellSummaryWords + BellLeafWords) * 8
)

// SessionBell is a view of a session doorbell area.
type SessionBell struct {
	summary []atomic.Uint64
	leaf    []atomic.Uint64
}

// NewSessionBell returns the view of mem, which must be at least
// BellAreaLen bytes and 8-byte aligned (a mapping is).
func NewSessionBell(mem []byte) (*SessionBell, error) {
	if len(mem) < BellAreaLen || uintptr(unsafe.Pointer(unsafe.SliceData(mem)))%8 != 0 {
		return nil, fmt.Errorf("%w: session doorbell of %d bytes", ErrMalformed, len(mem))
	}
	words := unsafe.Slice((*atomic.Uint64)(unsafe.Pointer(unsafe.SliceData(mem))), BellSummaryWords+BellLeafWords)
	return &SessionBell{summary: words[:BellSummaryWords], leaf: words[BellSummaryWords:]}, nil
}

// Ring sets bell i (a client's side); it reports false for an i out of
// range.
func (b *SessionBell) Ring(i uint32) bool {
	if i >= MaxBells {
		return false
	}
	k := i / 64
	b.leaf[k].Or(1 << (i % 64))
	b.summary[k/64].Or(1 << (k % 64))
	return true
}

// Take clears every bell set and calls f with each (the daemon's side).
func (b *SessionBell) Take(f func(i uint32)) {
	for w := range b.summary {
		sum := b.summary[w].Swap(0)
		for sum != 0 {
			j := bits.TrailingZeros64(sum)
			sum &^= 1 << j
			k := w*64 + j
			leaf := b.leaf[k].Swap(0)
			for leaf != 0 {
				t := bits.TrailingZeros64(leaf)
				leaf &^= 1 << t
				f(uint32(k*64 + t))
			}
		}
	}
}
