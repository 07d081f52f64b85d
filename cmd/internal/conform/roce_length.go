// RoCEv2 RC responder: more length and key checks (IBTA Vol 1 §9.7.5.1.3
// CHK_LENGTH, C9-94; §9.7.5.2 CHK_RKEY for READs) and the duplicate of
// the other atomic (C9-105).

package conform

import (
	"github.com/rnic/rnic/roce/wire"
)

var lengthCases = []Case{
	{
		ID: "9.7.5.1.3/write-last-short", Section: sec97513, Transport: RoCE,
		Title: "a WRITE whose Last packet ends it before its RETH length is NAKed as an invalid request at that packet",
		Setup: Setup{Attr: mtu256},
		Steps: []Step{
			Send{
				{Op: wire.RCWriteFirst, PSN: 0, Payload: pattern(256, 1), RETH: &RETH{Len: 600}},
				{Op: wire.RCWriteLast, PSN: 1, AckReq: true, Payload: pattern(100, 2)},
			},
			nak(1, wire.NAKInvalidRequest),
		},
		Break: &Break{Name: "length errors NAKed as remote operational errors", Out: RewriteNAK(wire.NAKInvalidRequest, wire.NAKRemoteOpError)},
	},
	{
		ID: "9.7.5.1.3/send-first-short", Section: sec97513, Transport: RoCE,
		Title: "a SEND First shorter than the path MTU is NAKed as an invalid request",
		Setup: Setup{Attr: mtu256, Recvs: 1},
		Steps: []Step{
			Send{{Op: wire.RCSendFirst, PSN: 0, AckReq: true, Payload: pattern(100, 1)}},
			nak(0, wire.NAKInvalidRequest),
		},
		Break: &Break{Name: "the DUT takes the SEND First for a SEND Only", In: editInOp(wire.RCSendFirst, func(pkt []byte) {
			pkt[0] = byte(wire.RCSendOnly)
		})},
	},
	{
		ID: "C9-94/dma-length", Section: sec97513, Transport: RoCE,
		Title: "a READ asking for more than 2^31 bytes is NAKed as an invalid request",
		Steps: []Step{
			Send{{Op: wire.RCReadRequest, PSN: 0, RETH: &RETH{Len: 1<<31 + 1}}},
			nak(0, wire.NAKInvalidRequest),
		},
		Break: &Break{Name: "length errors NAKed as remote access errors", Out: RewriteNAK(wire.NAKInvalidRequest, wire.NAKRemoteAccess)},
	},
	{
		ID: "9.7.5.2/read-rkey-invalid", Section: sec9752, Transport: RoCE,
		Title: "a READ with an R_Key that names no region is NAKed with a remote access error",
		Steps: []Step{
			Send{{Op: wire.RCReadRequest, PSN: 0, RETH: &RETH{RKey: BadRKey(DefaultMR), Len: 16}}},
			nak(0, wire.NAKRemoteAccess),
		},
		Break: &Break{Name: "access errors NAKed as invalid requests", Out: RewriteNAK(wire.NAKRemoteAccess, wire.NAKInvalidRequest)},
	},
	{
		ID: "C9-105/cmpswap", Section: sec9754, Transport: RoCE, Needs: needAtomics,
		Title: "a duplicate CmpSwap returns the saved original value and does not swap again",
		Setup: Setup{MRs: []MR{{Name: DefaultMR, Len: 64, Access: allRemote}}},
		Steps: []Step{
			WriteMem{MR: DefaultMR, Data: le64(7)},
			Send{{Op: wire.RCCmpSwap, PSN: 0, Atomic: &Atomic{Compare: 7, SwapAdd: 9}}},
			Expect{Want: []Check{IsOp(wire.RCAtomicAck), PSNIs(0), IsACK(), MSNIs(1), OrigIs(7)}},
			WriteMem{MR: DefaultMR, Data: le64(7)},
			Send{{Op: wire.RCCmpSwap, PSN: 0, Atomic: &Atomic{Compare: 7, SwapAdd: 9}}},
			Expect{Want: []Check{IsOp(wire.RCAtomicAck), PSNIs(0), IsACK(), OrigIs(7)}},
			Memory{MR: DefaultMR, Want: le64(7)},
		},
		Break: &Break{Name: "a duplicate atomic executed again", Fresh: InFresh(func() FrameFault {
			return Nth(2, wire.RCCmpSwap, SetInPSN(1))
		})},
	},
}

func init() { Register(lengthCases...) }
