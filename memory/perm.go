// Key index placement: where on the wire a table slot's keys point.
//
// Slots are allocated densely (a counter and a free list, table.go), which
// keeps the table small and lookups one array access. Were the dense slot
// number the key index, one rkey seen would tell a peer its neighbours'
// indices (0x104, 0x2c6, … then 0x2421, 0x2543), and guessing a live rkey
// would take about 256 tries. So the index on the wire is
//
//	perm(generation × limit + slot)
//
// where perm is a keyed permutation of the 24-bit index space, limit the
// number of slots, and generation counts the slot's occupants modulo the
// (2^24 / limit) generations that fit: the live indices are scattered over
// all 2^24 values with no relation between them, a region that takes over a
// freed slot gets an index unrelated to its predecessor's, and guessing a
// live key takes on the order of 2^32 / (live keys) tries. Re-keying an
// occupant (fast register, bind) keeps its index, as the verbs require: only
// the key byte changes.
//
// perm is a balanced Feistel network (two 12-bit halves, 8 rounds, a keyed
// 64-bit mixing function as round function), cycle-walked so that index 0 is
// never produced and never accepted. A lookup inverts it and splits the
// result into slot and generation (the generation is checked with the whole
// key): a few dozen arithmetic operations, no memory, no allocation.

package memory

const (
	permRounds   = 8
	permHalfBits = 12
	permHalfMask = 1<<permHalfBits - 1
)

// indexPerm is a keyed bijection of [1, 2^24) onto itself.
type indexPerm struct {
	k [permRounds]uint64
}

func newIndexPerm(s *keySource) indexPerm {
	var p indexPerm
	for i := range p.k {
		p.k[i] = s.rng.Uint64()
	}
	return p
}

// round is the Feistel round function: the top 12 bits of a keyed
// multiply-xorshift-multiply mix of x (the top bits of a product depend on
// every bit below them, the xorshift folds the high key bits back in).
func (p *indexPerm) round(r int, x uint32) uint32 {
	h := (uint64(x) ^ p.k[r]) * 0xff51afd7ed558ccd
	h ^= h >> 29
	h *= 0xc4ceb9fe1a85ec53
	return uint32(h >> (64 - permHalfBits))
}

func (p *indexPerm) encrypt(x uint32) uint32 {
	l, r := x>>permHalfBits, x&permHalfMask
	for i := 0; i < permRounds; i++ {
		l, r = r, l^p.round(i, r)
	}
	return l<<permHalfBits | r
}

func (p *indexPerm) decrypt(y uint32) uint32 {
	l, r := y>>permHalfBits, y&permHalfMask
	for i := permRounds - 1; i >= 0; i-- {
		l, r = r^p.round(i, l), l
	}
	return l<<permHalfBits | r
}

// wire returns the key index of slot (1 ≤ slot ≤ MaxKeyIndex). Walking the
// cycle past 0 keeps the map a bijection of the nonzero indices.
func (p *indexPerm) wire(slot uint32) uint32 {
	y := p.encrypt(slot)
	for y == 0 {
		y = p.encrypt(y)
	}
	return y
}

// slot returns the slot whose key index is idx, the inverse of wire; 0 for
// index 0, which no slot has.
func (p *indexPerm) slot(idx uint32) uint32 {
	if idx == 0 || idx > MaxKeyIndex {
		return 0
	}
	x := p.decrypt(idx)
	for x == 0 {
		x = p.decrypt(x)
	}
	return x
}
