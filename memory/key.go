// Key layout and key-byte generation. An lkey/rkey is a 24-bit table index
// followed by an 8-bit key byte (as rxe does). The key byte must not be
// predictable from earlier keys (a peer that saw one rkey must not be able to
// guess the next) and must not repeat quickly in a reused slot (a stale key
// held by a peer must not reach the slot's next occupant).

package memory

import (
	crand "crypto/rand"
	"fmt"
	"math/rand/v2"
)

const (
	keyIndexShift = 8
	// MaxKeyIndex is the largest index a key can carry (24 bits).
	MaxKeyIndex = 1<<24 - 1
	// recentKeys is how many of a slot's previous key bytes a new key byte
	// must differ from.
	recentKeys = 32
)

// KeyIndex returns the table index part of an lkey or rkey.
func KeyIndex(key uint32) uint32 { return key >> keyIndexShift }

// KeyByte returns the 8-bit key part of an lkey or rkey.
func KeyByte(key uint32) uint8 { return uint8(key) }

func makeKey(index uint32, b uint8) uint32 { return index<<keyIndexShift | uint32(b) }

// keyHistory remembers the last recentKeys key bytes used in a slot.
type keyHistory struct {
	ring [recentKeys]uint8
	n    uint8 // valid entries in ring
	next uint8 // where the next entry goes
}

func (h *keyHistory) has(b uint8) bool {
	for i := uint8(0); i < h.n; i++ {
		if h.ring[i] == b {
			return true
		}
	}
	return false
}

func (h *keyHistory) add(b uint8) {
	h.ring[h.next] = b
	h.next = (h.next + 1) % recentKeys
	if h.n < recentKeys {
		h.n++
	}
}

// keySource draws key bytes from ChaCha8, seeded from crypto/rand or, in a
// simulation that must replay exactly, from Config.Seed. It is not safe for
// concurrent use; the Table calls it under its mutex.
type keySource struct {
	rng *rand.ChaCha8
}

func newKeySource(seed *[32]byte) (keySource, error) {
	if seed != nil {
		return keySource{rng: rand.NewChaCha8(*seed)}, nil
	}
	var s [32]byte
	if _, err := crand.Read(s[:]); err != nil {
		return keySource{}, fmt.Errorf("memory: seeding key source: %w", err)
	}
	return keySource{rng: rand.NewChaCha8(s)}, nil
}

// fresh returns a uniformly random key byte not among h's recent bytes, and
// records it in h. At most recentKeys of 256 values are excluded, so a draw
// is accepted with probability at least 7/8.
func (s *keySource) fresh(h *keyHistory) uint8 {
	for {
		v := s.rng.Uint64()
		for i := 0; i < 8; i++ {
			b := uint8(v >> (8 * i))
			if !h.has(b) {
				h.add(b)
				return b
			}
		}
	}
}
