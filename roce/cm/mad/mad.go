package mad

import (
	"encoding/binary"
	"errors"
)

// The common MAD header, IBTA Vol 1 §13.4.3 (Figure 145), 24 bytes in front
// of every management datagram; a CM MAD is 256 bytes in all:
//
//	 0: BaseVersion (1) | MgmtClass (0x07 CM) | ClassVersion (2) | R | Method (7 bits)
//	 4: Status (16)                           | ClassSpecific (16)
//	 8: TransactionID (64)
//	16: AttributeID (16)                      | Reserved (16)
//	20: AttributeModifier (32)
//	24: class data (232 bytes for the CM)

// MAD sizes and the CM class's numbers.
const (
	MADLen       = 256
	MADHeaderLen = 24
	DataLen      = MADLen - MADHeaderLen

	BaseVersion    = 1
	MgmtClassCM    = 0x07
	CMClassVersion = 2
	MethodSend     = 0x03 // the CM sends every message with Send (§12.6.1)
)

// AttrID identifies a CM message (§12.6, Table 104).
type AttrID uint16

// CM attribute IDs.
const (
	AttrClassPortInfo AttrID = 0x0001
	AttrREQ           AttrID = 0x0010
	AttrMRA           AttrID = 0x0011
	AttrREJ           AttrID = 0x0012
	AttrREP           AttrID = 0x0013
	AttrRTU           AttrID = 0x0014
	AttrDREQ          AttrID = 0x0015
	AttrDREP          AttrID = 0x0016
	AttrSIDRREQ       AttrID = 0x0017
	AttrSIDRREP       AttrID = 0x0018
	AttrLAP           AttrID = 0x0019
	AttrAPR           AttrID = 0x001A
)

func (a AttrID) String() string {
	switch a {
	case AttrClassPortInfo:
		return "ClassPortInfo"
	case AttrREQ:
		return "REQ"
	case AttrMRA:
		return "MRA"
	case AttrREJ:
		return "REJ"
	case AttrREP:
		return "REP"
	case AttrRTU:
		return "RTU"
	case AttrDREQ:
		return "DREQ"
	case AttrDREP:
		return "DREP"
	case AttrSIDRREQ:
		return "SIDR_REQ"
	case AttrSIDRREP:
		return "SIDR_REP"
	case AttrLAP:
		return "LAP"
	case AttrAPR:
		return "APR"
	}
	return "unknown"
}

// Decoding errors.
var (
	ErrShort        = errors.New("cm: MAD shorter than 256 bytes")
	ErrNotCM        = errors.New("cm: not a CM MAD (base version, class or class version)")
	ErrBadMethod    = errors.New("cm: CM MAD with a method other than Send")
	ErrUnknownAttr  = errors.New("cm: unknown CM attribute")
	ErrBadField     = errors.New("cm: field out of range")
	ErrPrivateData  = errors.New("cm: private data too long")
	ErrBadCMAHeader = errors.New("cm: bad rdma_cm header")
)

// MAD is a view of a management datagram: the header's accessors and the
// class data.
type MAD []byte

func (m MAD) BaseVersion() uint8    { return m[0] }
func (m MAD) MgmtClass() uint8      { return m[1] }
func (m MAD) ClassVersion() uint8   { return m[2] }
func (m MAD) Method() uint8         { return m[3] }
func (m MAD) Status() uint16        { return binary.BigEndian.Uint16(m[4:]) }
func (m MAD) ClassSpecific() uint16 { return binary.BigEndian.Uint16(m[6:]) }
func (m MAD) TID() uint64           { return binary.BigEndian.Uint64(m[8:]) }
func (m MAD) AttrID() AttrID        { return AttrID(binary.BigEndian.Uint16(m[16:])) }
func (m MAD) AttrModifier() uint32  { return binary.BigEndian.Uint32(m[20:]) }
func (m MAD) Data() []byte          { return m[MADHeaderLen:MADLen] }
func (m MAD) setHeader(a AttrID, tid uint64) {
	clear(m[:MADHeaderLen])
	m[0], m[1], m[2], m[3] = BaseVersion, MgmtClassCM, CMClassVersion, MethodSend
	binary.BigEndian.PutUint64(m[8:], tid)
	binary.BigEndian.PutUint16(m[16:], uint16(a))
}

// ParseMAD checks that b holds a CM MAD (§13.4.3: base version 1, class
// 0x07, class version 2, method Send) and returns its view, trimmed to 256
// bytes. It does not allocate.
func ParseMAD(b []byte) (MAD, error) {
	if len(b) < MADLen {
		return nil, ErrShort
	}
	m := MAD(b[:MADLen])
	if m.BaseVersion() != BaseVersion || m.MgmtClass() != MgmtClassCM || m.ClassVersion() != CMClassVersion {
		return nil, ErrNotCM
	}
	if m.Method() != MethodSend {
		return nil, ErrBadMethod
	}
	return m, nil
}
