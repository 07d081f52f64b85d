package scenario

import (
	"encoding/binary"

	"github.com/rnic/rnic/transport"
)

// The base transport header of a frame on the stage's link: untagged
// Ethernet, a 20-byte IPv4 header and UDP put it at byte 42.
const bthAt = 14 + 20 + 8

// BTH opcodes the scripts look for (IBTA Vol 1 §9.2, Table 37).
const (
	opRCSendMiddle    = 0x01
	opRCWriteMiddle   = 0x07
	opRCWriteLast     = 0x08
	opRCReadRespMid   = 0x0E
	opRCAck           = 0x11
	opRCAtomicAck     = 0x12
	opRCSendOnly      = 0x04
	opUCWriteMiddle   = 0x27
	anyOpcode         = -1
	rocePort          = 4791
	firstPayloadBytes = bthAt + 12
)

// opcode is the BTH opcode of a RoCEv2 frame, -2 for any other frame.
func opcode(frame []byte) int {
	if len(frame) < bthAt+12 || binary.BigEndian.Uint16(frame[14+20+2:]) != rocePort {
		return -2
	}
	return int(frame[bthAt])
}

// nth returns a script factory whose script gives verdict v to the k-th
// (0-based) frame sent in dir with opcode op (anyOpcode: every RoCEv2
// frame), and passes every other frame.
func nth(dir transport.Direction, op, k int, v func(frame []byte) transport.Verdict) func() transport.Script {
	return func() transport.Script {
		seen := 0
		return func(d transport.Direction, _ int, frame []byte) transport.Verdict {
			o := opcode(frame)
			if d != dir || o == -2 || (op != anyOpcode && o != op) {
				return transport.Pass()
			}
			seen++
			if seen-1 == k {
				return v(frame)
			}
			return transport.Pass()
		}
	}
}

// drop is the verdict that loses the frame.
func drop([]byte) transport.Verdict { return transport.Drop() }

// flipPayloadBit flips one bit of the first payload byte: the ICRC no
// longer matches, and nothing else about the frame changes.
func flipPayloadBit(frame []byte) transport.Verdict {
	frame[firstPayloadBytes] ^= 0x10
	return transport.Replace(frame)
}

// dropFrom returns a script factory that loses every frame in dir from
// the k-th (0-based) RoCEv2 frame on: a peer that went away.
func dropFrom(dir transport.Direction, k int) func() transport.Script {
	return func() transport.Script {
		seen := 0
		return func(d transport.Direction, _ int, frame []byte) transport.Verdict {
			if d != dir || opcode(frame) == -2 {
				return transport.Pass()
			}
			seen++
			if seen-1 >= k {
				return transport.Drop()
			}
			return transport.Pass()
		}
	}
}
