// The faults that break an in-process rnic iWARP DUT for the self-test
// (Break.Stream): each rewrites or drops MPA frames or FPDUs on their way
// out of or into the DUT (iwport.Fault).

package conform

import (
	"encoding/binary"

	"github.com/rnic/rnic/cmd/internal/conform/iwport"
	"github.com/rnic/rnic/iwarp/wire"
)

// iwBreak is a Break with a stateless stream fault.
func iwBreak(name string, f iwport.Fault) *Break {
	return &Break{Name: name, Stream: func() iwport.Fault { return f }}
}

// iwEditMPA edits the MPA frame of direction d.
func iwEditMPA(d iwport.Dir, edit func(b []byte)) iwport.Fault {
	return func(u *iwport.Unit) [][]byte {
		if u.MPA && u.Dir == d {
			edit(u.Bytes)
		}
		return [][]byte{u.Bytes}
	}
}

// iwEditFPDU edits the ULPDU of every FPDU of direction d with opcode op.
func iwEditFPDU(d iwport.Dir, op wire.Opcode, edit func(ulpdu []byte)) iwport.Fault {
	return func(u *iwport.Unit) [][]byte {
		if !u.MPA && u.Dir == d && u.Opcode() == op {
			edit(u.ULPDU())
		}
		return [][]byte{u.Bytes}
	}
}

// iwDropFPDU drops every FPDU of direction d with opcode op.
func iwDropFPDU(d iwport.Dir, op wire.Opcode) iwport.Fault {
	return func(u *iwport.Unit) [][]byte {
		if !u.MPA && u.Dir == d && u.Opcode() == op {
			return nil
		}
		return [][]byte{u.Bytes}
	}
}

// iwTermCode makes the NIC's Terminates carry code instead.
func iwTermCode(code wire.TermCode) iwport.Fault {
	return iwEditFPDU(iwport.Out, wire.OpTerminate, func(b []byte) {
		binary.BigEndian.PutUint16(b[wire.DDPUntaggedLen:], uint16(code))
	})
}

// iwTermAsLE makes the NIC's Terminates lay their control word out as a
// little-endian bitfield would (as siw's do).
func iwTermAsLE() iwport.Fault {
	return iwEditFPDU(iwport.Out, wire.OpTerminate, func(b []byte) {
		if len(b) >= wire.DDPUntaggedLen+wire.TermControlLen {
			termControlToLE(b[wire.DDPUntaggedLen : wire.DDPUntaggedLen+wire.TermControlLen])
		}
	})
}

// iwTermNoHeaders makes the NIC's Terminates carry no offending headers
// (M, D and R clear; the FPDU shrinks to the control word).
func iwTermNoHeaders() iwport.Fault {
	return func(u *iwport.Unit) [][]byte {
		if u.MPA || u.Dir != iwport.Out || u.Opcode() != wire.OpTerminate {
			return [][]byte{u.Bytes}
		}
		seg := append([]byte(nil), u.ULPDU()[:wire.DDPUntaggedLen+wire.TermControlLen]...)
		seg[wire.DDPUntaggedLen+2] &^= 0xE0
		crc := wire.FPDU(u.Bytes).WireCRC() != 0
		return [][]byte{wire.AppendFPDU(nil, wire.Framing{CRC: crc}, 0, seg, nil)}
	}
}

// iwDropTerminate makes the NIC close without its Terminate.
func iwDropTerminate() iwport.Fault { return iwDropFPDU(iwport.Out, wire.OpTerminate) }
