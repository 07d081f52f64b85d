package conform

import (
	"encoding/binary"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/roce/wire"
)

// allRemote is every remote access and local write.
const allRemote = memory.LocalWrite | memory.RemoteWrite | memory.RemoteRead | memory.RemoteAtomic

// be64 is v in the wire's (and the atomics') byte order... atomics work on
// host-order 64-bit words in memory: little-endian on every host rnic
// runs on, as on x86 and arm64 hardware.
func be64(v uint64) []byte {
	b := make([]byte, 8)
	binary.LittleEndian.PutUint64(b, v)
	return b
}

// fillAt returns n bytes of fill repeated, starting at offset off.
func fillAt(fill []byte, off, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = fill[(off+i)%len(fill)]
	}
	return b
}

// dropInOp drops frames with opcode op on their way into the DUT.
func dropInOp(op wire.Opcode) FrameFault {
	return func(b []byte) []byte {
		if o, ok := opOf(b); ok && o == op {
			return nil
		}
		return b
	}
}

// nthNAK drops the n-th NAK (of any code) the DUT sends.
func nthNAK(n int) FrameFault {
	seen := 0
	return func(b []byte) []byte {
		f := decodeOut(b)
		if f == nil || f.Packet.Opcode() != wire.RCAck || f.Packet.AETH().Syndrome().Type() == wire.AckTypeACK {
			return b
		}
		if seen++; seen == n {
			return nil
		}
		return b
	}
}

// editInOp edits the transport packet of frames with opcode op on their
// way into the DUT (re-sealed).
func editInOp(op wire.Opcode, edit func(pkt []byte)) FrameFault {
	return EditIn(func(pkt []byte) {
		if wire.Opcode(pkt[0]) == op {
			edit(pkt)
		}
	})
}
