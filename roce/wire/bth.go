package wire

import "encoding/binary"

// BTH is a view of the Base Transport Header, IBTA Vol 1 §9.2.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|    OpCode     |S|M|Pad| TVer  |            P_Key              |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|F|B|  Resv6    |                 DestQP                        |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|A|   Resv7     |                   PSN                         |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// S = solicited event, M = MigReq, Pad = PadCnt, F/B = FECN/BECN (Annex A17
// puts them in byte 4, which the ICRC masks), A = AckReq.
type BTH []byte

// BTHLen is the size of a BTH.
const BTHLen = 12

// DefaultPKey is the default partition key, the only one rxe accepts.
const DefaultPKey = 0xFFFF

func (b BTH) Opcode() Opcode   { return Opcode(b[0]) }
func (b BTH) SE() bool         { return b[1]&0x80 != 0 }
func (b BTH) MigReq() bool     { return b[1]&0x40 != 0 }
func (b BTH) PadCnt() int      { return int(b[1]>>4) & 3 }
func (b BTH) TVer() uint8      { return b[1] & 0x0F }
func (b BTH) PKey() uint16     { return binary.BigEndian.Uint16(b[2:]) }
func (b BTH) FECN() bool       { return b[4]&0x80 != 0 }
func (b BTH) BECN() bool       { return b[4]&0x40 != 0 }
func (b BTH) Resv6() uint8     { return b[4] & 0x3F }
func (b BTH) DestQP() uint32   { return be24(b[5:]) }
func (b BTH) AckReq() bool     { return b[8]&0x80 != 0 }
func (b BTH) Resv7() uint8     { return b[8] & 0x7F }
func (b BTH) PSN() uint32      { return be24(b[9:]) }
func (b BTH) SetPSN(p uint32)  { put24(b[9:], p) }
func (b BTH) SetAckReq(a bool) { setBit(&b[8], 0x80, a) }

// BTHFields is the decoded form of a BTH, used to build one.
type BTHFields struct {
	Opcode Opcode
	SE     bool
	MigReq bool
	PadCnt int // set by the encoder from the payload length
	TVer   uint8
	PKey   uint16
	FECN   bool
	BECN   bool
	Resv6  uint8
	DestQP uint32
	AckReq bool
	Resv7  uint8
	PSN    uint32
}

// Encode writes f into b, which must be BTHLen bytes.
func (b BTH) Encode(f *BTHFields) {
	b[0] = byte(f.Opcode)
	b[1] = byte(f.PadCnt&3)<<4 | f.TVer&0x0F
	setBit(&b[1], 0x80, f.SE)
	setBit(&b[1], 0x40, f.MigReq)
	binary.BigEndian.PutUint16(b[2:], f.PKey)
	b[4] = f.Resv6 & 0x3F
	setBit(&b[4], 0x80, f.FECN)
	setBit(&b[4], 0x40, f.BECN)
	put24(b[5:], f.DestQP)
	b[8] = f.Resv7 & 0x7F
	setBit(&b[8], 0x80, f.AckReq)
	put24(b[9:], f.PSN)
}

// Fields decodes the view.
func (b BTH) Fields() BTHFields {
	return BTHFields{
		Opcode: b.Opcode(), SE: b.SE(), MigReq: b.MigReq(), PadCnt: b.PadCnt(), TVer: b.TVer(),
		PKey: b.PKey(), FECN: b.FECN(), BECN: b.BECN(), Resv6: b.Resv6(), DestQP: b.DestQP(),
		AckReq: b.AckReq(), Resv7: b.Resv7(), PSN: b.PSN(),
	}
}

func be24(b []byte) uint32 { _ = b[2]; return uint32(b[0])<<16 | uint32(b[1])<<8 | uint32(b[2]) }

func put24(b []byte, v uint32) {
	_ = b[2]
	b[0], b[1], b[2] = byte(v>>16), byte(v>>8), byte(v)
}

func setBit(b *byte, mask byte, on bool) {
	if on {
		*b |= mask
	} else {
		*b &^= mask
	}
}
