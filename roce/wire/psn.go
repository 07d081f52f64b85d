package wire

// PSN arithmetic (IBTA Vol 1 §9.7.1): packet sequence numbers are 24 bits
// and wrap, so they compare in serial-number fashion: a is "before" b when
// the forward distance from a to b is less than half the space (2^23).

// PSNMask keeps the 24 significant bits of a PSN.
const PSNMask = 0xFFFFFF

// PSNAdd returns p advanced by n (n may be negative), modulo 2^24.
func PSNAdd(p uint32, n int) uint32 { return uint32(int64(p)+int64(n)) & PSNMask }

// PSNDiff returns a−b as a signed distance in (−2^23, 2^23].
func PSNDiff(a, b uint32) int32 {
	d := (a - b) & PSNMask
	if d > 1<<23 {
		return int32(d) - 1<<24
	}
	return int32(d)
}

// PSNBefore reports whether a comes strictly before b.
func PSNBefore(a, b uint32) bool { return PSNDiff(a, b) < 0 }

// PSNAfterOrEqual reports whether a is b or comes after it.
func PSNAfterOrEqual(a, b uint32) bool { return PSNDiff(a, b) >= 0 }
