package wire

import (
	"encoding/binary"
	"strconv"
)

// Terminate is a view of the body of an RDMAP Terminate message, RFC 5040
// §4.8. A Terminate travels as an untagged DDP segment on queue 2 (opcode 7,
// L=1, MO=0); this view starts after that DDP header.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	| Layer | EType |  Error Code   |M|D|R|        Reserved         |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|   DDP Segment Length (if D)   |                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+                               +
//	~    Terminated DDP Header (if D): 14 bytes tagged, 18 untagged ~
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	~    Terminated RDMA Header (if R): the Read Request's 28 bytes ~
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// M says the DDP Segment Length is valid, D that the offending segment's DDP
// header is included (preceded by its length, so the pair reads like the
// start of the offending FPDU), R that its RDMAP header is included. The
// Terminated RDMA Header is the rest of the body when R is set: RFC 5040
// defines it for the RDMA Read Request (28 bytes, after its DDP header);
// Linux siw also sets R for Send-type messages, which have no RDMAP header
// beyond the control byte, and then attaches nothing more, so an R with no
// bytes is accepted.
//
// Linux siw fills the DDP Segment Length with the offending segment's payload
// length (ULPDU_Length less the headers) where RFC 5040 asks for the segment
// length; the value is carried as is.
type Terminate []byte

// Sizes of the Terminate body parts.
const (
	TermControlLen   = 4
	TermSegLenLen    = 2
	termFlagM        = 0x80
	termFlagD        = 0x40
	termFlagR        = 0x20
	termReservedMask = 0x1FFF
)

// ParseTerminate checks that b is a well-formed Terminate body and returns a
// view of it.
func ParseTerminate(b []byte) (Terminate, error) {
	if len(b) < TermControlLen {
		return nil, ErrTruncated
	}
	t := Terminate(b)
	end := TermControlLen
	if t.D() {
		if len(b) < end+TermSegLenLen+1 {
			return nil, ErrTruncated
		}
		end += TermSegLenLen + DDPHeaderLen(b[end+TermSegLenLen]&ddpFlagT != 0)
		if len(b) < end {
			return nil, ErrTruncated
		}
	}
	if !t.R() && len(b) != end {
		return nil, ErrBadLength
	}
	return t, nil
}

func (t Terminate) Code() TermCode   { return TermCode(binary.BigEndian.Uint16(t)) }
func (t Terminate) Layer() TermLayer { return t.Code().Layer() }
func (t Terminate) EType() uint8     { return t.Code().EType() }
func (t Terminate) ErrCode() uint8   { return t.Code().ErrCode() }
func (t Terminate) M() bool          { return t[2]&termFlagM != 0 }
func (t Terminate) D() bool          { return t[2]&termFlagD != 0 }
func (t Terminate) R() bool          { return t[2]&termFlagR != 0 }
func (t Terminate) Reserved() uint16 { return binary.BigEndian.Uint16(t[2:]) & termReservedMask }
func (t Terminate) rdmaOffset() int  { return TermControlLen + t.ddpPartLen() }
func (t Terminate) RDMAPHeader() []byte {
	if !t.R() {
		return nil
	}
	return t[t.rdmaOffset():]
}

func (t Terminate) ddpPartLen() int {
	if !t.D() {
		return 0
	}
	return TermSegLenLen + DDPHeaderLen(t[TermControlLen+TermSegLenLen]&ddpFlagT != 0)
}

// DDPSegmentLength returns the DDP Segment Length field; it is present when
// D is set (and meaningful when M is).
func (t Terminate) DDPSegmentLength() uint16 {
	if !t.D() {
		return 0
	}
	return binary.BigEndian.Uint16(t[TermControlLen:])
}

// DDPHeader returns the Terminated DDP Header, nil when D is clear. Its
// version fields are as the offender sent them and may be invalid.
func (t Terminate) DDPHeader() DDPHeader {
	if !t.D() {
		return nil
	}
	s := TermControlLen + TermSegLenLen
	return DDPHeader(t[s : TermControlLen+t.ddpPartLen()])
}

// TermFields is the decoded form of a Terminate body.
type TermFields struct {
	Code        TermCode
	M, D, R     bool
	Reserved    uint16 // 13 bits, zero on send
	DDPSegLen   uint16 // written when D is set
	DDPHeader   []byte // written when D is set: 14 or 18 bytes
	RDMAPHeader []byte // written when R is set
}

// Fields decodes the view. The byte slices point into t.
func (t Terminate) Fields() TermFields {
	return TermFields{
		Code: t.Code(), M: t.M(), D: t.D(), R: t.R(), Reserved: t.Reserved(),
		DDPSegLen: t.DDPSegmentLength(), DDPHeader: t.DDPHeader(), RDMAPHeader: t.RDMAPHeader(),
	}
}

// TermLen is the size of the Terminate body AppendTerminate writes for f.
func TermLen(f *TermFields) int {
	n := TermControlLen
	if f.D {
		n += TermSegLenLen + len(f.DDPHeader)
	}
	if f.R {
		n += len(f.RDMAPHeader)
	}
	return n
}

// AppendTerminate appends the Terminate body described by f to dst.
func AppendTerminate(dst []byte, f *TermFields) []byte {
	var c [TermControlLen]byte
	binary.BigEndian.PutUint16(c[:], uint16(f.Code))
	ctl := f.Reserved & termReservedMask
	if f.M {
		ctl |= termFlagM << 8
	}
	if f.D {
		ctl |= termFlagD << 8
	}
	if f.R {
		ctl |= termFlagR << 8
	}
	binary.BigEndian.PutUint16(c[2:], ctl)
	dst = append(dst, c[:]...)
	if f.D {
		dst = binary.BigEndian.AppendUint16(dst, f.DDPSegLen)
		dst = append(dst, f.DDPHeader...)
	}
	if f.R {
		dst = append(dst, f.RDMAPHeader...)
	}
	return dst
}

// The error codes a Terminate carries, RFC 5040 §4.8 (RDMAP layer), RFC 5041
// §7.2 (DDP layer), RFC 5044 §8 (LLP layer, MPA over TCP) and RFC 6581 §9
// (three LLP codes for enhanced connection setup).

// TermLayer is the layer that detected the error.
type TermLayer uint8

// Layers.
const (
	LayerRDMAP TermLayer = 0
	LayerDDP   TermLayer = 1
	LayerLLP   TermLayer = 2 // MPA over TCP
)

func (l TermLayer) String() string {
	switch l {
	case LayerRDMAP:
		return "RDMAP"
	case LayerDDP:
		return "DDP"
	case LayerLLP:
		return "LLP (MPA)"
	}
	return "layer " + strconv.Itoa(int(l))
}

// TermCode is the first 16 bits of a Terminate's control field: Layer (4
// bits), EType (4 bits) and Error Code (8 bits).
type TermCode uint16

// MakeTermCode builds a TermCode.
func MakeTermCode(l TermLayer, etype, code uint8) TermCode {
	return TermCode(uint16(l&0xF)<<12 | uint16(etype&0xF)<<8 | uint16(code))
}

func (c TermCode) Layer() TermLayer { return TermLayer(c >> 12) }
func (c TermCode) EType() uint8     { return uint8(c>>8) & 0xF }
func (c TermCode) ErrCode() uint8   { return uint8(c) }

// ETypes of the RDMAP layer.
const (
	ETypeRDMAPLocalCatastrophic = 0x0
	ETypeRDMAPRemoteProtection  = 0x1
	ETypeRDMAPRemoteOperation   = 0x2
)

// ETypes of the DDP layer.
const (
	ETypeDDPLocalCatastrophic = 0x0
	ETypeDDPTagged            = 0x1
	ETypeDDPUntagged          = 0x2
	ETypeDDPReservedForLLP    = 0x3
)

// EType of the LLP layer (MPA).
const ETypeMPA = 0x0

// Terminate codes, named Term<Layer><EType?><Error>.
const (
	// RDMAP layer, RFC 5040 §4.8.
	TermRDMAPLocalCatastrophic    TermCode = 0x0000
	TermRDMAPInvalidSTag          TermCode = 0x0100
	TermRDMAPBaseBounds           TermCode = 0x0101
	TermRDMAPAccessRights         TermCode = 0x0102
	TermRDMAPSTagNotAssociated    TermCode = 0x0103
	TermRDMAPTOWrap               TermCode = 0x0104
	TermRDMAPProtCannotInvalidate TermCode = 0x0109
	TermRDMAPProtUnspecified      TermCode = 0x01FF
	TermRDMAPVersion              TermCode = 0x0205
	TermRDMAPUnexpectedOpcode     TermCode = 0x0206
	TermRDMAPCatastrophicStream   TermCode = 0x0207
	TermRDMAPCatastrophicGlobal   TermCode = 0x0208
	TermRDMAPOpCannotInvalidate   TermCode = 0x0209
	TermRDMAPOpUnspecified        TermCode = 0x02FF
	// DDP layer, RFC 5041 §7.2.
	TermDDPLocalCatastrophic  TermCode = 0x1000
	TermDDPTaggedInvalidSTag  TermCode = 0x1100
	TermDDPTaggedBaseBounds   TermCode = 0x1101
	TermDDPTaggedSTagNotAssoc TermCode = 0x1102
	TermDDPTaggedTOWrap       TermCode = 0x1103
	TermDDPTaggedVersion      TermCode = 0x1104
	TermDDPUntaggedInvalidQN  TermCode = 0x1201
	TermDDPUntaggedNoBuffer   TermCode = 0x1202
	TermDDPUntaggedMSNRange   TermCode = 0x1203
	TermDDPUntaggedInvalidMO  TermCode = 0x1204
	TermDDPUntaggedTooLong    TermCode = 0x1205
	TermDDPUntaggedVersion    TermCode = 0x1206
	// LLP layer (MPA), RFC 5044 §8; 0x05-0x07 from RFC 6581 §9.
	TermLLPStreamLost        TermCode = 0x2001
	TermLLPCRC               TermCode = 0x2002
	TermLLPMarkerMismatch    TermCode = 0x2003
	TermLLPInvalidReqRep     TermCode = 0x2004
	TermLLPLocalCatastrophic TermCode = 0x2005
	TermLLPInsufficientIRD   TermCode = 0x2006
	TermLLPNoMatchingRTR     TermCode = 0x2007
)

type etypeKey struct {
	layer TermLayer
	etype uint8
}

var etypeNames = map[etypeKey]string{
	{LayerRDMAP, ETypeRDMAPLocalCatastrophic}: "local catastrophic error",
	{LayerRDMAP, ETypeRDMAPRemoteProtection}:  "remote protection error",
	{LayerRDMAP, ETypeRDMAPRemoteOperation}:   "remote operation error",
	{LayerDDP, ETypeDDPLocalCatastrophic}:     "local catastrophic error",
	{LayerDDP, ETypeDDPTagged}:                "tagged buffer error",
	{LayerDDP, ETypeDDPUntagged}:              "untagged buffer error",
	{LayerDDP, ETypeDDPReservedForLLP}:        "reserved for the LLP",
	{LayerLLP, ETypeMPA}:                      "MPA error",
}

var termNames = map[TermCode]string{
	TermRDMAPLocalCatastrophic:    "local catastrophic error",
	TermRDMAPInvalidSTag:          "invalid STag",
	TermRDMAPBaseBounds:           "base or bounds violation",
	TermRDMAPAccessRights:         "access rights violation",
	TermRDMAPSTagNotAssociated:    "STag not associated with RDMAP stream",
	TermRDMAPTOWrap:               "TO wrap",
	TermRDMAPProtCannotInvalidate: "STag cannot be invalidated",
	TermRDMAPProtUnspecified:      "unspecified error",
	TermRDMAPVersion:              "invalid RDMAP version",
	TermRDMAPUnexpectedOpcode:     "unexpected opcode",
	TermRDMAPCatastrophicStream:   "catastrophic error, localized to RDMAP stream",
	TermRDMAPCatastrophicGlobal:   "catastrophic error, global",
	TermRDMAPOpCannotInvalidate:   "STag cannot be invalidated",
	TermRDMAPOpUnspecified:        "unspecified error",
	TermDDPLocalCatastrophic:      "local catastrophic error",
	TermDDPTaggedInvalidSTag:      "invalid STag",
	TermDDPTaggedBaseBounds:       "base or bounds violation",
	TermDDPTaggedSTagNotAssoc:     "STag not associated with DDP stream",
	TermDDPTaggedTOWrap:           "TO wrap",
	TermDDPTaggedVersion:          "invalid DDP version",
	TermDDPUntaggedInvalidQN:      "invalid QN",
	TermDDPUntaggedNoBuffer:       "invalid MSN, no buffer available",
	TermDDPUntaggedMSNRange:       "invalid MSN, MSN range is not valid",
	TermDDPUntaggedInvalidMO:      "invalid MO",
	TermDDPUntaggedTooLong:        "DDP message too long for available buffer",
	TermDDPUntaggedVersion:        "invalid DDP version",
	TermLLPStreamLost:             "TCP connection closed, terminated or lost",
	TermLLPCRC:                    "MPA CRC error",
	TermLLPMarkerMismatch:         "MPA marker and ULPDU length field mismatch",
	TermLLPInvalidReqRep:          "invalid MPA Request or Reply frame",
	TermLLPLocalCatastrophic:      "local catastrophic error",
	TermLLPInsufficientIRD:        "insufficient IRD resources",
	TermLLPNoMatchingRTR:          "no matching RTR option",
}

// Known reports whether c is a code the specifications define.
func (c TermCode) Known() bool { _, ok := termNames[c]; return ok }

// String names the code the way an operator reads it, e.g.
// "RDMAP, remote protection error, invalid STag".
func (c TermCode) String() string {
	et, ok := etypeNames[etypeKey{c.Layer(), c.EType()}]
	if !ok {
		et = "error type " + strconv.Itoa(int(c.EType()))
	}
	name, ok := termNames[c]
	if !ok {
		name = "error code 0x" + strconv.FormatUint(uint64(c.ErrCode())|0x100, 16)[1:]
	}
	return c.Layer().String() + ", " + et + ", " + name
}
