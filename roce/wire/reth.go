package wire

import "encoding/binary"

// RETH is a view of the RDMA Extended Transport Header, IBTA Vol 1 §9.3.3.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                     Virtual Address (64)                      |
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                            R_Key                              |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                          DMA Length                           |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// It opens RDMA WRITE First/Only and READ requests (and follows FETH in
// FLUSH). DMA lengths up to 2^31 are valid (C9-94).
type RETH []byte

// RETHLen is the size of a RETH.
const RETHLen = 16

func (r RETH) VA() uint64        { return binary.BigEndian.Uint64(r) }
func (r RETH) RKey() uint32      { return binary.BigEndian.Uint32(r[8:]) }
func (r RETH) DMALength() uint32 { return binary.BigEndian.Uint32(r[12:]) }

// RETHFields is the decoded form of a RETH.
type RETHFields struct {
	VA     uint64
	RKey   uint32
	Length uint32
}

// Encode writes f into r.
func (r RETH) Encode(f *RETHFields) {
	binary.BigEndian.PutUint64(r, f.VA)
	binary.BigEndian.PutUint32(r[8:], f.RKey)
	binary.BigEndian.PutUint32(r[12:], f.Length)
}

// Fields decodes the view.
func (r RETH) Fields() RETHFields { return RETHFields{r.VA(), r.RKey(), r.DMALength()} }
