package wire

import (
	"encoding/binary"
	"strconv"
)

// The RDMAP headers that follow some messages' DDP header: the RDMA Read
// Request (RFC 5040 §4.4), the Atomic Request and Response (RFC 7306 §5.1)
// and Immediate Data (RFC 7306 §6.2). The Terminate body is in terminate.go.
// Write, Read Response and the Sends have no RDMAP header beyond the control
// byte in the DDP header.

// ReadRequest is a view of the RDMA Read Request header, RFC 5040 §4.4. It
// travels untagged on queue 1; the responder answers with Read Response
// segments tagged with the Data Sink STag and TO.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                         Data Sink STag                        |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                  Data Sink Tagged Offset (64)                 |
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                    RDMA Read Message Size                     |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                        Data Source STag                       |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Data Source Tagged Offset (64)                |
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type ReadRequest []byte

// ReadRequestLen is the size of a Read Request header.
const ReadRequestLen = 28

func (r ReadRequest) SinkSTag() uint32   { return binary.BigEndian.Uint32(r) }
func (r ReadRequest) SinkTO() uint64     { return binary.BigEndian.Uint64(r[4:]) }
func (r ReadRequest) Size() uint32       { return binary.BigEndian.Uint32(r[12:]) }
func (r ReadRequest) SourceSTag() uint32 { return binary.BigEndian.Uint32(r[16:]) }
func (r ReadRequest) SourceTO() uint64   { return binary.BigEndian.Uint64(r[20:]) }

// ReadRequestFields is the decoded form of a Read Request header.
type ReadRequestFields struct {
	SinkSTag   uint32
	SinkTO     uint64
	Size       uint32
	SourceSTag uint32
	SourceTO   uint64
}

// Encode writes f into r.
func (r ReadRequest) Encode(f *ReadRequestFields) {
	binary.BigEndian.PutUint32(r, f.SinkSTag)
	binary.BigEndian.PutUint64(r[4:], f.SinkTO)
	binary.BigEndian.PutUint32(r[12:], f.Size)
	binary.BigEndian.PutUint32(r[16:], f.SourceSTag)
	binary.BigEndian.PutUint64(r[20:], f.SourceTO)
}

// Fields decodes the view.
func (r ReadRequest) Fields() ReadRequestFields {
	return ReadRequestFields{r.SinkSTag(), r.SinkTO(), r.Size(), r.SourceSTag(), r.SourceTO()}
}

// AtomicRequest is a view of the Atomic Request header, RFC 7306 §5.1.1. It
// travels untagged on queue 1 and operates on the 64-bit word at Remote
// STag / Remote Tagged Offset, which must be 8-byte aligned.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                  Reserved (Not Used)                  |AtomOp |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                      Request Identifier                       |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                          Remote STag                          |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                   Remote Tagged Offset (64)                   |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                   Add or Swap Data (64)                       |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                   Add or Swap Mask (64)                       |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                   Compare Data (64)                           |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                   Compare Mask (64)                           |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// (each 64-bit field is two 32-bit rows on the wire.) The masks let one
// request act on a bit field of the word; an all-ones mask gives the plain
// FetchAdd and CmpSwap of InfiniBand. The Request Identifier is echoed in the
// Atomic Response.
type AtomicRequest []byte

// AtomicRequestLen is the size of an Atomic Request header.
const AtomicRequestLen = 52

// AtomicOp is the operation an Atomic Request asks for, RFC 7306 §5.1.1.
// Wireshark knows FetchAdd 0 and CmpSwap 2; urdma's header file numbers
// CmpSwap 1 (urdma never implemented atomics, zrlio/urdma#31). The RFC
// defines three operations, 0000b FetchAdd, 0001b Swap and 0010b CmpSwap,
// which is what Wireshark's two values agree with.
type AtomicOp uint8

// Atomic operations.
const (
	AtomicFetchAdd AtomicOp = 0
	AtomicSwap     AtomicOp = 1
	AtomicCmpSwap  AtomicOp = 2
)

func (a AtomicOp) String() string {
	switch a {
	case AtomicFetchAdd:
		return "FetchAdd"
	case AtomicSwap:
		return "Swap"
	case AtomicCmpSwap:
		return "CmpSwap"
	}
	return "AtomicOp " + strconv.Itoa(int(a))
}

// Valid reports whether the operation is defined.
func (a AtomicOp) Valid() bool { return a <= AtomicCmpSwap }

func (a AtomicRequest) Reserved() uint32    { return binary.BigEndian.Uint32(a) >> 4 }
func (a AtomicRequest) Op() AtomicOp        { return AtomicOp(a[3] & 0x0F) }
func (a AtomicRequest) RequestID() uint32   { return binary.BigEndian.Uint32(a[4:]) }
func (a AtomicRequest) STag() uint32        { return binary.BigEndian.Uint32(a[8:]) }
func (a AtomicRequest) TO() uint64          { return binary.BigEndian.Uint64(a[12:]) }
func (a AtomicRequest) AddSwapData() uint64 { return binary.BigEndian.Uint64(a[20:]) }
func (a AtomicRequest) AddSwapMask() uint64 { return binary.BigEndian.Uint64(a[28:]) }
func (a AtomicRequest) CompareData() uint64 { return binary.BigEndian.Uint64(a[36:]) }
func (a AtomicRequest) CompareMask() uint64 { return binary.BigEndian.Uint64(a[44:]) }

// AtomicRequestFields is the decoded form of an Atomic Request header.
type AtomicRequestFields struct {
	Reserved    uint32 // 28 bits, zero on send
	Op          AtomicOp
	RequestID   uint32
	STag        uint32
	TO          uint64
	AddSwapData uint64
	AddSwapMask uint64
	CompareData uint64
	CompareMask uint64
}

// Encode writes f into a.
func (a AtomicRequest) Encode(f *AtomicRequestFields) {
	binary.BigEndian.PutUint32(a, f.Reserved<<4|uint32(f.Op&0x0F))
	binary.BigEndian.PutUint32(a[4:], f.RequestID)
	binary.BigEndian.PutUint32(a[8:], f.STag)
	binary.BigEndian.PutUint64(a[12:], f.TO)
	binary.BigEndian.PutUint64(a[20:], f.AddSwapData)
	binary.BigEndian.PutUint64(a[28:], f.AddSwapMask)
	binary.BigEndian.PutUint64(a[36:], f.CompareData)
	binary.BigEndian.PutUint64(a[44:], f.CompareMask)
}

// Fields decodes the view.
func (a AtomicRequest) Fields() AtomicRequestFields {
	return AtomicRequestFields{
		Reserved: a.Reserved(), Op: a.Op(), RequestID: a.RequestID(), STag: a.STag(), TO: a.TO(),
		AddSwapData: a.AddSwapData(), AddSwapMask: a.AddSwapMask(),
		CompareData: a.CompareData(), CompareMask: a.CompareMask(),
	}
}

// AtomicResponse is a view of the Atomic Response header, RFC 7306 §5.1.2,
// untagged on queue 3.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Original Request Identifier                   |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|               Original Remote Data Value (64)                 |
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type AtomicResponse []byte

// AtomicResponseLen is the size of an Atomic Response header.
const AtomicResponseLen = 12

func (a AtomicResponse) RequestID() uint32     { return binary.BigEndian.Uint32(a) }
func (a AtomicResponse) OriginalValue() uint64 { return binary.BigEndian.Uint64(a[4:]) }

// AtomicResponseFields is the decoded form of an Atomic Response header.
type AtomicResponseFields struct {
	RequestID     uint32
	OriginalValue uint64
}

// Encode writes f into a.
func (a AtomicResponse) Encode(f *AtomicResponseFields) {
	binary.BigEndian.PutUint32(a, f.RequestID)
	binary.BigEndian.PutUint64(a[4:], f.OriginalValue)
}

// Fields decodes the view.
func (a AtomicResponse) Fields() AtomicResponseFields {
	return AtomicResponseFields{a.RequestID(), a.OriginalValue()}
}

// Immediate is a view of the Immediate Data header, RFC 7306 §6.2: 8 bytes
// of ULP data carried by an Immediate Data (or Immediate Data with SE)
// message, untagged on queue 0.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                     Immediate Data (64)                       |
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type Immediate []byte

// ImmediateLen is the size of an Immediate Data header.
const ImmediateLen = 8

// Data returns the immediate data.
func (i Immediate) Data() uint64 { return binary.BigEndian.Uint64(i) }

// Encode writes d into i.
func (i Immediate) Encode(d uint64) { binary.BigEndian.PutUint64(i, d) }
