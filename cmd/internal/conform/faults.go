// Faults for the cases' Breaks: small rewrites of the RoCEv2 frames an
// in-process DUT sends or receives, each making it violate one rule.

package conform

import (
	"github.com/rnic/rnic/roce/wire"
)

// decodeOut decodes a frame of the DUT's (nil if it is not RoCEv2).
func decodeOut(b []byte) *wire.Frame {
	var f wire.Frame
	if f.Decode(b, 0) != nil {
		return nil
	}
	return &f
}

// DropOps drops the DUT's frames with these opcodes.
func DropOps(ops ...wire.Opcode) FrameFault {
	return func(b []byte) []byte {
		if f := decodeOut(b); f != nil {
			for _, o := range ops {
				if f.Packet.Opcode() == o {
					return nil
				}
			}
		}
		return b
	}
}

// EditOut edits the DUT's decodable frames (then re-seals them): edit
// sees the decoded frame over the fault's copy.
func EditOut(edit func(f *wire.Frame)) FrameFault {
	return func(b []byte) []byte {
		if f := decodeOut(b); f != nil {
			edit(f)
			Reseal(b)
		}
		return b
	}
}

// RewriteAETH changes the syndrome and MSN of every AETH the DUT sends.
func RewriteAETH(fn func(s wire.Syndrome, msn uint32) (wire.Syndrome, uint32)) FrameFault {
	return EditOut(func(f *wire.Frame) {
		if a := f.Packet.AETH(); a != nil {
			s, m := fn(a.Syndrome(), a.MSN())
			a.Encode(s, m)
		}
	})
}

// ShiftPSN adds delta to the PSN of the DUT's frames with these opcodes
// (all if none given).
func ShiftPSN(delta int, ops ...wire.Opcode) FrameFault {
	return EditOut(func(f *wire.Frame) {
		bth := f.Packet.BTH()
		if len(ops) == 0 || containsOp(ops, bth.Opcode()) {
			bth.SetPSN(wire.PSNAdd(bth.PSN(), delta))
		}
	})
}

func containsOp(ops []wire.Opcode, o wire.Opcode) bool {
	for _, x := range ops {
		if x == o {
			return true
		}
	}
	return false
}

// EditIn edits the raw transport packet (BTH through ICRC) of every
// RoCEv2 frame the DUT receives and re-seals it: the DUT then judges a
// frame other than the one the tester sent, as a DUT that skipped a check
// would.
func EditIn(edit func(pkt []byte)) FrameFault {
	return func(b []byte) []byte {
		l3, n, ok := ipHeader(b)
		if !ok || len(b) < l3+n+wire.UDPLen+wire.BTHLen+wire.ICRCLen {
			return b
		}
		edit(b[l3+n+wire.UDPLen:])
		Reseal(b)
		return b
	}
}

// ResealIn re-seals every frame the DUT receives: a DUT that does not
// check the ICRC.
func ResealIn() FrameFault { return EditIn(func([]byte) {}) }

// chain applies a, then b (either may be nil).
func chain(a, b FrameFault) FrameFault {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return func(f []byte) []byte {
		if f = a(f); f == nil {
			return nil
		}
		return b(f)
	}
}

// opOf returns the BTH opcode of a RoCEv2 frame, without judging the
// rest of it.
func opOf(b []byte) (wire.Opcode, bool) {
	l3, n, ok := ipHeader(b)
	if !ok || len(b) < l3+n+wire.UDPLen+wire.BTHLen {
		return 0, false
	}
	return wire.Opcode(b[l3+n+wire.UDPLen]), true
}

// Nth applies f to the n-th frame (1-based) with opcode op only; the
// count is the fault's state, so use it from Break.Fresh.
func Nth(n int, op wire.Opcode, f FrameFault) FrameFault {
	seen := 0
	return func(b []byte) []byte {
		if o, ok := opOf(b); ok && o == op {
			if seen++; seen == n {
				return f(b)
			}
		}
		return b
	}
}

// Drop drops the frame.
func Drop(b []byte) []byte { return nil }

// SetInPSN adds delta to the PSN of a received frame: with Nth, a DUT
// that takes a duplicate for a new request.
func SetInPSN(delta int) FrameFault {
	return EditIn(func(pkt []byte) {
		bth := wire.BTH(pkt)
		bth.SetPSN(wire.PSNAdd(bth.PSN(), delta))
	})
}

// OutFresh and InFresh wrap one stateful fault as a Break.Fresh.
func OutFresh(mk func() FrameFault) func() (FrameFault, FrameFault) {
	return func() (FrameFault, FrameFault) { return mk(), nil }
}

func InFresh(mk func() FrameFault) func() (FrameFault, FrameFault) {
	return func() (FrameFault, FrameFault) { return nil, mk() }
}

// RewriteNAK turns NAKs with code from into code to.
func RewriteNAK(from, to wire.NAKCode) FrameFault {
	return RewriteAETH(func(s wire.Syndrome, msn uint32) (wire.Syndrome, uint32) {
		if s.Type() == wire.AckTypeNAK && s.NAK() == from {
			return wire.NAKSyndrome(to), msn
		}
		return s, msn
	})
}
