// RoCEv2 RC responder: atomic operations (IBTA Vol 1 §9.4.5, §9.7.5.1.3
// alignment).

package conform

import (
	"encoding/binary"

	"github.com/rnic/rnic/roce/wire"
)

const sec945 = "IBTA Vol 1 §9.4.5"

// atomicETH is the offset of the AtomicETH in an atomic request.
const atomicETH = wire.BTHLen

// editAtomic edits the AtomicETH of atomic requests into the DUT.
func editAtomic(edit func(a wire.AtomicETH)) FrameFault {
	return EditIn(func(pkt []byte) {
		if o := wire.Opcode(pkt[0]); o == wire.RCCmpSwap || o == wire.RCFetchAdd {
			edit(wire.AtomicETH(pkt[atomicETH : atomicETH+wire.AtomicETHLen]))
		}
	})
}

var atomicCases = []Case{
	{
		ID: "9.4.5/cmpswap-equal", Section: sec945, Transport: RoCE, Needs: needAtomics,
		Title: "a CmpSwap whose compare value matches swaps and returns the original value",
		Setup: Setup{MRs: []MR{{Name: DefaultMR, Len: 64, Access: allRemote}}},
		Steps: []Step{
			WriteMem{MR: DefaultMR, Off: 8, Data: le64(0x0707070707070707)},
			Send{{Op: wire.RCCmpSwap, PSN: 0, Atomic: &Atomic{VA: AddrOf(DefaultMR, 8), Compare: 0x0707070707070707, SwapAdd: 0x0909}}},
			Expect{Want: []Check{IsOp(wire.RCAtomicAck), PSNIs(0), IsACK(), MSNIs(1), OrigIs(0x0707070707070707)}},
			Memory{MR: DefaultMR, Off: 8, Want: le64(0x0909)},
		},
		Break: &Break{Name: "the DUT compares against another value", In: editAtomic(func(a wire.AtomicETH) {
			binary.BigEndian.PutUint64(a[20:], 1)
		})},
	},
	{
		ID: "9.4.5/cmpswap-differ", Section: sec945, Transport: RoCE, Needs: needAtomics,
		Title: "a CmpSwap whose compare value differs leaves memory alone and returns the original value",
		Setup: Setup{MRs: []MR{{Name: DefaultMR, Len: 64, Access: allRemote}}},
		Steps: []Step{
			WriteMem{MR: DefaultMR, Data: le64(7)},
			Send{{Op: wire.RCCmpSwap, PSN: 0, Atomic: &Atomic{Compare: 8, SwapAdd: 9}}},
			Expect{Want: []Check{IsOp(wire.RCAtomicAck), PSNIs(0), IsACK(), OrigIs(7)}},
			Memory{MR: DefaultMR, Want: le64(7)},
		},
		Break: &Break{Name: "the DUT swaps unconditionally", In: editAtomic(func(a wire.AtomicETH) {
			binary.BigEndian.PutUint64(a[20:], 7)
		})},
	},
	{
		ID: "9.4.5/fetchadd", Section: sec945, Transport: RoCE, Needs: needAtomics,
		Title: "a FetchAdd adds modulo 2^64 (carry across 32 bits) and returns the original value",
		Setup: Setup{MRs: []MR{{Name: DefaultMR, Len: 64, Access: allRemote}}},
		Steps: []Step{
			WriteMem{MR: DefaultMR, Off: 16, Data: le64(0xFFFFFFFF)},
			Send{{Op: wire.RCFetchAdd, PSN: 0, Atomic: &Atomic{VA: AddrOf(DefaultMR, 16), SwapAdd: 0xFFFFFFFF00000001}}},
			Expect{Want: []Check{IsOp(wire.RCAtomicAck), PSNIs(0), IsACK(), MSNIs(1), OrigIs(0xFFFFFFFF)}},
			Memory{MR: DefaultMR, Off: 16, Want: le64(0)},
		},
		Break: &Break{Name: "the ATOMIC Acknowledge carries the new value", Out: EditOut(func(f *wire.Frame) {
			if a := f.Packet.AtomicAckETH(); a != nil {
				a.SetOrigData(0)
			}
		})},
	},
	{
		ID: "9.7.5.1.3/atomic-misaligned", Section: sec97513, Transport: RoCE, Needs: needAtomics,
		Title: "an atomic at an address not 8-byte aligned is NAKed as an invalid request and not executed",
		Setup: Setup{MRs: []MR{{Name: DefaultMR, Len: 64, Access: allRemote}}},
		Steps: []Step{
			Send{{Op: wire.RCFetchAdd, PSN: 0, Atomic: &Atomic{VA: AddrOf(DefaultMR, 4), SwapAdd: 1}}},
			nak(0, wire.NAKInvalidRequest),
			Memory{MR: DefaultMR, Want: make([]byte, 16)},
		},
		Break: &Break{Name: "the DUT aligns the address itself", In: editAtomic(func(a wire.AtomicETH) {
			a[7] &^= 7
		})},
	},
}

func le64(v uint64) []byte { return be64(v) }

func init() { Register(atomicCases...) }
