package wire

import "encoding/binary"

// AtomicETH is a view of the Atomic Extended Transport Header, IBTA Vol 1
// §9.3.4, carried by CmpSwap (0x13) and FetchAdd (0x14) requests.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                     Virtual Address (64)                      |
//	+                                                               +
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                            R_Key                              |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Swap (or Add) Data (64)                       |
//	+                                                               +
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                     Compare Data (64)                         |
//	+                                                               +
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type AtomicETH []byte

// AtomicETHLen is the size of an AtomicETH.
const AtomicETHLen = 28

func (a AtomicETH) VA() uint64      { return binary.BigEndian.Uint64(a) }
func (a AtomicETH) RKey() uint32    { return binary.BigEndian.Uint32(a[8:]) }
func (a AtomicETH) SwapAdd() uint64 { return binary.BigEndian.Uint64(a[12:]) }
func (a AtomicETH) Compare() uint64 { return binary.BigEndian.Uint64(a[20:]) }

// AtomicETHFields is the decoded form of an AtomicETH.
type AtomicETHFields struct {
	VA      uint64
	RKey    uint32
	SwapAdd uint64
	Compare uint64
}

// Encode writes f into a.
func (a AtomicETH) Encode(f *AtomicETHFields) {
	binary.BigEndian.PutUint64(a, f.VA)
	binary.BigEndian.PutUint32(a[8:], f.RKey)
	binary.BigEndian.PutUint64(a[12:], f.SwapAdd)
	binary.BigEndian.PutUint64(a[20:], f.Compare)
}

// Fields decodes the view.
func (a AtomicETH) Fields() AtomicETHFields {
	return AtomicETHFields{a.VA(), a.RKey(), a.SwapAdd(), a.Compare()}
}

// AtomicAckETH is a view of the Atomic Acknowledge Extended Transport Header,
// IBTA Vol 1 §9.5.3: the original remote data, following the AETH of an
// ATOMIC Acknowledge (0x12).
//
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                  Original Remote Data (64)                    |
//	+                                                               +
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type AtomicAckETH []byte

// AtomicAckETHLen is the size of an AtomicAckETH.
const AtomicAckETHLen = 8

// OrigData is the remote value before the atomic operation.
func (a AtomicAckETH) OrigData() uint64 { return binary.BigEndian.Uint64(a) }

// SetOrigData writes the original remote data.
func (a AtomicAckETH) SetOrigData(v uint64) { binary.BigEndian.PutUint64(a, v) }
