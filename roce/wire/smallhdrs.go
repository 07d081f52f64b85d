package wire

import "encoding/binary"

// The four-byte and eight-byte extension headers, IBTA Vol 1 §9.3.
//
// ImmDt (§9.3.5), 4 bytes: immediate data, opaque to the transport; verbs
// passes it through as a big-endian 32-bit value.
//
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                        Immediate Data                         |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// IETH (§9.3.6), 4 bytes: the R_Key a SEND with Invalidate invalidates.
//
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                            R_Key                              |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// DETH (§9.3.2), 8 bytes: datagram header of UD packets.
//
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                            Q_Key                              |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|    Reserved   |                 Source QP                     |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// FETH (IBTA Vol 1 1.5 §9.3.8, FLUSH), 4 bytes: placement type in bits 3:0
// (bit 0 global visibility, bit 1 persistence), selectivity in bits 5:4
// (0 memory range, 1 whole MR); the rest reserved.
//
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Reserved                          |Sel| PlT   |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+

// ImmDt is a view of the Immediate Data header.
type ImmDt []byte

// IETH is a view of the Invalidate Extended Transport Header.
type IETH []byte

// DETH is a view of the Datagram Extended Transport Header.
type DETH []byte

// FETH is a view of the Flush Extended Transport Header.
type FETH []byte

// Sizes of the small extension headers.
const (
	ImmDtLen = 4
	IETHLen  = 4
	DETHLen  = 8
	FETHLen  = 4
)

// PrivilegedQKeyBit marks a privileged Q_Key (IBTA Vol 1 §10.2.4): a UD QP
// may send one only if it is privileged, and a send WR with it uses the QP's
// own Q_Key instead.
const PrivilegedQKeyBit = 0x80000000

func (i ImmDt) Imm() uint32         { return binary.BigEndian.Uint32(i) }
func (i ImmDt) SetImm(v uint32)     { binary.BigEndian.PutUint32(i, v) }
func (i IETH) RKey() uint32         { return binary.BigEndian.Uint32(i) }
func (i IETH) SetRKey(v uint32)     { binary.BigEndian.PutUint32(i, v) }
func (d DETH) QKey() uint32         { return binary.BigEndian.Uint32(d) }
func (d DETH) Reserved() uint8      { return d[4] }
func (d DETH) SrcQP() uint32        { return be24(d[5:]) }
func (f FETH) Word() uint32         { return binary.BigEndian.Uint32(f) }
func (f FETH) PlacementType() uint8 { return f[3] & 0x0F }
func (f FETH) Selectivity() uint8   { return f[3] >> 4 & 3 }
func (f FETH) SetWord(w uint32)     { binary.BigEndian.PutUint32(f, w) }
func (d DETH) Encode(f *DETHFields) {
	binary.BigEndian.PutUint32(d, f.QKey)
	d[4] = f.Reserved
	put24(d[5:], f.SrcQP)
}

// DETHFields is the decoded form of a DETH.
type DETHFields struct {
	QKey     uint32
	Reserved uint8
	SrcQP    uint32
}

// Fields decodes the view.
func (d DETH) Fields() DETHFields { return DETHFields{d.QKey(), d.Reserved(), d.SrcQP()} }

// FETH placement types and selectivity.
const (
	FlushGlobalVisibility = 1
	FlushPersistence      = 2
	FlushSelectRange      = 0
	FlushSelectWholeMR    = 1
)

// MakeFETH builds the FETH word from a placement type and selectivity.
func MakeFETH(placement, selectivity uint8) uint32 {
	return uint32(selectivity&3)<<4 | uint32(placement&0x0F)
}
