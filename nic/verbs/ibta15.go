// The post-time rules of IBTA 1.5's FLUSH and ATOMIC WRITE work requests,
// shared by the layers that check WRs (nic, rnicd's client).

package verbs

import "fmt"

// CheckIBTA15WR applies the rules of a FLUSH or ATOMIC WRITE WR (any other
// WR passes). Neither carries an SGE or inline data (ibv_wr_flush and
// ibv_wr_atomic_write take none); an ATOMIC WRITE's address is 8-byte
// aligned, as for the other atomics; a FLUSH names one or both placement
// types, a known selectivity, and a range no longer than a message. The
// error wraps ErrInvalid.
func CheckIBTA15WR(wr *SendWR) error {
	op := wr.Opcode
	if !IBTA15Opcodes.Has(op) {
		return nil
	}
	if len(wr.SGL) > 0 || wr.Inline != nil {
		return fmt.Errorf("%v carries no SGE and no inline data: %w", op, ErrInvalid)
	}
	if op == WRAtomicWrite {
		if wr.RemoteAddr&7 != 0 {
			return fmt.Errorf("%v remote address %#x is not 8-byte aligned: %w", op, wr.RemoteAddr, ErrInvalid)
		}
		return nil
	}
	switch {
	case wr.FlushType == 0 || wr.FlushType&^FlushTypes != 0:
		return fmt.Errorf("FLUSH placement type %#x: want GLOBAL, PERSISTENT or both: %w", uint8(wr.FlushType), ErrInvalid)
	case wr.FlushLevel != FlushRange && wr.FlushLevel != FlushMR:
		return fmt.Errorf("FLUSH selectivity %d: want RANGE or MR: %w", wr.FlushLevel, ErrInvalid)
	case uint64(wr.FlushLen) > MaxMsgSize:
		return fmt.Errorf("FLUSH of %d bytes exceeds max_msg_sz %d: %w", wr.FlushLen, uint64(MaxMsgSize), ErrInvalid)
	}
	return nil
}
