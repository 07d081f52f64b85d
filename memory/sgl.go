// Scatter/gather lists: copying between a work request's SGEs (lkeys) and a
// packet payload, at a byte offset into the message so that multi-packet
// messages are handled packet by packet. Every SGE that contributes bytes is
// checked in full (key, PD, access, bounds) and referenced during its copy;
// nothing is allocated.

package memory

// SGE is one scatter/gather element of a work request.
type SGE struct {
	Addr   uint64
	Length uint32
	LKey   uint32
}

// TotalLength returns the sum of the SGE lengths.
func TotalLength(sges []SGE) uint64 {
	var n uint64
	for i := range sges {
		n += uint64(sges[i].Length)
	}
	return n
}

// Gather copies the message described by sges, from its start, into dst
// and returns the number of bytes copied: min(len(dst), TotalLength(sges)).
func (t *Table) Gather(pd PD, sges []SGE, dst []byte) (int, Fault) {
	return t.GatherAt(pd, sges, 0, dst)
}

// GatherAt copies the message described by sges, from byte offset on, into
// dst (one packet's payload) and returns the number of bytes copied:
// min(len(dst), TotalLength(sges)-offset). An offset beyond the message is
// OutOfBounds. SGEs need no access right (local reads are always allowed).
func (t *Table) GatherAt(pd PD, sges []SGE, offset int, dst []byte) (int, Fault) {
	if offset < 0 || uint64(offset) > TotalLength(sges) {
		return 0, OutOfBounds
	}
	skip := uint64(offset)
	n := 0
	for i := range sges {
		if n == len(dst) {
			return n, Ok
		}
		s := &sges[i]
		if skip >= uint64(s.Length) {
			skip -= uint64(s.Length)
			continue
		}
		tg, f := t.checkLocal(pd, s.LKey, s.Addr, uint64(s.Length), 0)
		if f != Ok {
			return n, f
		}
		off, _ := tg.span(s.Addr, uint64(s.Length)) // checked above
		c := copy(dst[n:], tg.mem[off+skip:off+uint64(s.Length)])
		tg.pin.release()
		n += c
		skip = 0
	}
	return n, Ok
}

// Scatter copies src into the message buffer described by sges, starting at
// byte offset (where this packet's payload goes). Every SGE written needs
// LocalWrite. If src does not fit, nothing is written and the result is
// OutOfBounds; a fault on a later SGE can leave earlier ones written (verbs
// leave a receive buffer undefined after an error completion).
func (t *Table) Scatter(pd PD, sges []SGE, src []byte, offset int) Fault {
	total := TotalLength(sges)
	if offset < 0 || uint64(offset) > total || uint64(len(src)) > total-uint64(offset) {
		return OutOfBounds
	}
	skip := uint64(offset)
	for i := range sges {
		if len(src) == 0 {
			break
		}
		s := &sges[i]
		if skip >= uint64(s.Length) {
			skip -= uint64(s.Length)
			continue
		}
		tg, f := t.checkLocal(pd, s.LKey, s.Addr, uint64(s.Length), LocalWrite)
		if f != Ok {
			return f
		}
		off, _ := tg.span(s.Addr, uint64(s.Length))
		c := copy(tg.mem[off+skip:off+uint64(s.Length)], src)
		if tg.region != nil {
			tg.region.written()
		}
		tg.pin.release()
		src = src[c:]
		skip = 0
	}
	return Ok
}
