package wire

import "encoding/binary"

// DDPHeader is a view of a DDP segment header, RFC 5041 §4, together with
// the RDMAP control byte that RDMAP keeps in DDP's first reserved-for-ULP
// octet (RFC 5040 §4.1). Every ULPDU (the payload of an FPDU) starts with one.
//
// Tagged buffer model (T=1), RFC 5041 §4.2: 14 bytes.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|T|L| Resrv | DV| RV|Rsv|Opcode |        Data Sink STag         |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|  STag (cont.)                 |   Data Sink Tagged Offset     |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+                               +
//	|                           (64 bits)                           |
//	+                               +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Untagged buffer model (T=0), RFC 5041 §4.3: 18 bytes.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|T|L| Resrv | DV| RV|Rsv|Opcode |   RsvdULP (Invalidate STag)   |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|  RsvdULP (cont.)              |       Queue Number (QN)       |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|  QN (cont.)                   | Message Sequence Number (MSN) |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|  MSN (cont.)                  |     Message Offset (MO)       |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|  MO (cont.)                   |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Byte 0 is DDP's control field: T (tagged), L (last segment of the
// message), 4 reserved bits (zero on send, not checked on receive) and DV, the
// DDP version, which must be 1. Byte 1 belongs to RDMAP: RV, the RDMAP
// version, which must be 1, 2 reserved bits and the opcode (opcode.go).
// In untagged segments the next 32 bits are RsvdULP: RDMAP puts the STag to
// invalidate there for Send with Invalidate and zero otherwise (RFC 5040
// §4.1). MSN counts the messages of a queue from 1; MO is the offset of the
// segment's payload within its message.
type DDPHeader []byte

// Header sizes, including the two control bytes.
const (
	DDPTaggedLen   = 14
	DDPUntaggedLen = 18
)

// Versions this package speaks; the only ones defined.
const (
	DDPVersion   = 1
	RDMAPVersion = 1
)

const (
	ddpFlagT     = 0x80
	ddpFlagL     = 0x40
	ddpRsvdMask  = 0x3C
	ddpDVMask    = 0x03
	rdmapRVShift = 6
	rdmapRsvd    = 0x30
	rdmapOpMask  = 0x0F
)

// DDPHeaderLen is the header size of a tagged or untagged segment.
func DDPHeaderLen(tagged bool) int {
	if tagged {
		return DDPTaggedLen
	}
	return DDPUntaggedLen
}

func (h DDPHeader) Tagged() bool         { return h[0]&ddpFlagT != 0 }
func (h DDPHeader) Last() bool           { return h[0]&ddpFlagL != 0 }
func (h DDPHeader) DDPReserved() uint8   { return h[0] & ddpRsvdMask >> 2 }
func (h DDPHeader) DV() uint8            { return h[0] & ddpDVMask }
func (h DDPHeader) RV() uint8            { return h[1] >> rdmapRVShift }
func (h DDPHeader) RDMAPReserved() uint8 { return h[1] & rdmapRsvd >> 4 }
func (h DDPHeader) Opcode() Opcode       { return Opcode(h[1] & rdmapOpMask) }

// Len is the header's size according to its T flag.
func (h DDPHeader) Len() int { return DDPHeaderLen(h.Tagged()) }

// Tagged-model fields; only for T=1.
func (h DDPHeader) STag() uint32 { return binary.BigEndian.Uint32(h[2:]) }
func (h DDPHeader) TO() uint64   { return binary.BigEndian.Uint64(h[6:]) }

// Untagged-model fields; only for T=0.
func (h DDPHeader) RsvdULP() uint32 { return binary.BigEndian.Uint32(h[2:]) }
func (h DDPHeader) QN() uint32      { return binary.BigEndian.Uint32(h[6:]) }
func (h DDPHeader) MSN() uint32     { return binary.BigEndian.Uint32(h[10:]) }
func (h DDPHeader) MO() uint32      { return binary.BigEndian.Uint32(h[14:]) }

// InvalidateSTag is RsvdULP read as the STag a Send with Invalidate names.
func (h DDPHeader) InvalidateSTag() uint32 { return h.RsvdULP() }

// DDPFields is the decoded form of a DDP header. The DDP and RDMAP versions
// are not fields: Encode always writes 1, and a segment with any other
// version does not decode (segment.go).
type DDPFields struct {
	Tagged        bool
	Last          bool
	DDPReserved   uint8 // 4 bits, zero on send
	RDMAPReserved uint8 // 2 bits, zero on send
	Opcode        Opcode
	// Tagged model.
	STag uint32
	TO   uint64
	// Untagged model. RsvdULP is the Invalidate STag of Send with
	// Invalidate (and Send with SE and Invalidate), zero otherwise.
	RsvdULP uint32
	QN      uint32
	MSN     uint32
	MO      uint32
}

// Encode writes f into h, which must be DDPHeaderLen(f.Tagged) bytes.
func (h DDPHeader) Encode(f *DDPFields) {
	c := byte(DDPVersion) | f.DDPReserved<<2&ddpRsvdMask
	if f.Tagged {
		c |= ddpFlagT
	}
	if f.Last {
		c |= ddpFlagL
	}
	h[0] = c
	h[1] = RDMAPVersion<<rdmapRVShift | f.RDMAPReserved<<4&rdmapRsvd | byte(f.Opcode)&rdmapOpMask
	if f.Tagged {
		binary.BigEndian.PutUint32(h[2:], f.STag)
		binary.BigEndian.PutUint64(h[6:], f.TO)
		return
	}
	binary.BigEndian.PutUint32(h[2:], f.RsvdULP)
	binary.BigEndian.PutUint32(h[6:], f.QN)
	binary.BigEndian.PutUint32(h[10:], f.MSN)
	binary.BigEndian.PutUint32(h[14:], f.MO)
}

// Fields decodes the view.
func (h DDPHeader) Fields() DDPFields {
	f := DDPFields{
		Tagged: h.Tagged(), Last: h.Last(), DDPReserved: h.DDPReserved(),
		RDMAPReserved: h.RDMAPReserved(), Opcode: h.Opcode(),
	}
	if f.Tagged {
		f.STag, f.TO = h.STag(), h.TO()
	} else {
		f.RsvdULP, f.QN, f.MSN, f.MO = h.RsvdULP(), h.QN(), h.MSN(), h.MO()
	}
	return f
}
