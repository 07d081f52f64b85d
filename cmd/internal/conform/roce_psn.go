// RoCEv2 RC responder: PSN checks and duplicates (IBTA Vol 1 §9.7.5.1.1,
// §9.7.5.1.4, C9-105).

package conform

import (
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce/wire"
)

// pattern returns n bytes counting up from seed, to tell payloads apart.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i)
	}
	return b
}

// recvOK is a successful receive completion of n bytes.
func recvOK(n uint32) WCWant {
	return WCWant{Status: verbs.WCSuccess, Opcode: Is(verbs.WCRecv), Len: Is(n)}
}

// ack expects an ACK for the request at rel with the MSN.
func ack(rel int, msn uint32) Expect {
	return Expect{Want: []Check{IsOp(wire.RCAck), PSNIs(rel), IsACK(), MSNIs(msn)}}
}

// nak expects a NAK with code c at rel.
func nak(rel int, c wire.NAKCode) Expect {
	return Expect{Want: []Check{IsOp(wire.RCAck), PSNIs(rel), IsNAK(c)}}
}

// mtu256 sets the path MTU to 256 bytes, so multi-packet messages stay
// small.
func mtu256(a *QPAttrs) { a.PathMTU = verbs.MTU256 }

const sec9751 = "IBTA Vol 1 §9.7.5.1.1"
const sec9754 = "IBTA Vol 1 §9.7.5.1.4"

var psnCases = []Case{
	{
		ID: "9.7.5.1.1/in-order", Section: sec9751, Transport: RoCE,
		Title: "a SEND at the expected PSN is executed and ACKed with its PSN and MSN 1",
		Setup: Setup{Recvs: 1},
		Steps: []Step{
			Send{{Op: wire.RCSendOnly, PSN: 0, AckReq: true, Payload: pattern(40, 1)}},
			ack(0, 1),
			Poll{Want: []WCWant{recvOK(40)}},
			Memory{MR: DefaultMR, Want: pattern(40, 1)},
		},
		Break: &Break{Name: "ACKs carry the next PSN", Out: ShiftPSN(1, wire.RCAck)},
	},
	{
		ID: "9.7.5.1.1/multi-packet", Section: sec9751, Transport: RoCE,
		Title: "a 3-packet WRITE across the PSN wrap lands whole and is ACKed at its last PSN",
		Setup: Setup{Attr: mtu256},
		Steps: []Step{
			Send{
				{Op: wire.RCWriteFirst, PSN: 0, Payload: pattern(256, 0), RETH: &RETH{VA: AddrOf(DefaultMR, 100), Len: 600}},
				{Op: wire.RCWriteMiddle, PSN: 1, Payload: pattern(256, 0x40)},
				{Op: wire.RCWriteLast, PSN: 2, AckReq: true, Payload: pattern(88, 0x80)},
			},
			ack(2, 1),
			Memory{MR: DefaultMR, Off: 100, Want: append(append(pattern(256, 0), pattern(256, 0x40)...), pattern(88, 0x80)...)},
		},
		Break: &Break{Name: "the DUT loses the middle packet", In: dropInOp(wire.RCWriteMiddle)},
	},
	{
		ID: "9.7.5.1.1/ahead", Section: sec9751, Transport: RoCE,
		Title: "a PSN ahead of the expected one gets one PSN sequence error NAK per gap, at the expected PSN",
		Setup: Setup{Recvs: 2},
		Steps: []Step{
			Send{{Op: wire.RCSendOnly, PSN: 2, AckReq: true, Payload: pattern(8, 1)}},
			nak(0, wire.NAKPSNSeqError),
			Send{{Op: wire.RCSendOnly, PSN: 3, AckReq: true, Payload: pattern(8, 2)}},
			ExpectNone{What: "a second NAK for the same gap"},
			Send{{Op: wire.RCSendOnly, PSN: 0, AckReq: true, Payload: pattern(8, 3)}},
			ack(0, 1),
			Poll{Want: []WCWant{recvOK(8)}},
			PollNone{},
		},
		Break: &Break{Name: "sequence errors NAKed as invalid requests", Out: RewriteNAK(wire.NAKPSNSeqError, wire.NAKInvalidRequest)},
	},
	{
		ID: "9.7.5.1.1/gap-per-nak", Section: sec9751, Transport: RoCE,
		Title: "after the gap is filled, a new gap gets a new sequence error NAK",
		Setup: Setup{Recvs: 2},
		Steps: []Step{
			Send{{Op: wire.RCSendOnly, PSN: 1, AckReq: true, Payload: pattern(8, 1)}},
			nak(0, wire.NAKPSNSeqError),
			Send{{Op: wire.RCSendOnly, PSN: 0, AckReq: true, Payload: pattern(8, 2)}},
			ack(0, 1),
			Send{{Op: wire.RCSendOnly, PSN: 3, AckReq: true, Payload: pattern(8, 3)}},
			nak(1, wire.NAKPSNSeqError),
		},
		Break: &Break{Name: "the second gap's NAK is lost", Fresh: OutFresh(func() FrameFault {
			return nthNAK(2)
		})},
	},
	{
		ID: "C9-105/send", Section: sec9754, Transport: RoCE,
		Title: "a duplicate SEND is ACKed again and not executed again",
		Setup: Setup{Recvs: 2},
		Steps: []Step{
			Send{{Op: wire.RCSendOnly, PSN: 0, AckReq: true, Payload: pattern(16, 1)}},
			ack(0, 1),
			Send{{Op: wire.RCSendOnly, PSN: 0, AckReq: true, Payload: pattern(16, 1)}},
			ack(0, 1),
			Poll{Want: []WCWant{recvOK(16)}},
			PollNone{},
		},
		Break: &Break{Name: "a duplicate SEND taken for a new one", Fresh: InFresh(func() FrameFault {
			return Nth(2, wire.RCSendOnly, SetInPSN(1))
		})},
	},
	{
		ID: "C9-105/write", Section: sec9754, Transport: RoCE,
		Title: "a duplicate WRITE is ACKed again and does not write memory again",
		Steps: []Step{
			Send{{Op: wire.RCWriteOnly, PSN: 0, AckReq: true, Payload: pattern(32, 1), RETH: &RETH{Len: 32}}},
			ack(0, 1),
			WriteMem{MR: DefaultMR, Data: pattern(32, 0xA0)},
			Send{{Op: wire.RCWriteOnly, PSN: 0, AckReq: true, Payload: pattern(32, 1), RETH: &RETH{Len: 32}}},
			ack(0, 1),
			Memory{MR: DefaultMR, Want: pattern(32, 0xA0)},
		},
		Break: &Break{Name: "a duplicate WRITE taken for a new one", Fresh: InFresh(func() FrameFault {
			return Nth(2, wire.RCWriteOnly, SetInPSN(1))
		})},
	},
	{
		ID: "C9-105/read", Section: sec9754, Transport: RoCE,
		Title: "a duplicate READ is answered again from its PSN",
		Setup: Setup{MRs: []MR{{Name: DefaultMR, Len: 4096, Access: allRemote, Fill: pattern(64, 7)}}},
		Steps: []Step{
			Send{{Op: wire.RCReadRequest, PSN: 0, RETH: &RETH{Len: 48}}},
			Expect{Want: []Check{IsOp(wire.RCReadResponseOnly), PSNIs(0), IsACK(), MSNIs(1), PayloadIs(pattern(48, 7))}},
			Send{{Op: wire.RCReadRequest, PSN: 0, RETH: &RETH{Len: 48}}},
			Expect{Want: []Check{IsOp(wire.RCReadResponseOnly), PSNIs(0), IsACK(), PayloadIs(pattern(48, 7))}},
		},
		Break: &Break{Name: "duplicate READs ignored", Fresh: InFresh(func() FrameFault {
			return Nth(2, wire.RCReadRequest, Drop)
		})},
	},
	{
		ID: "C9-105/read-subrange", Section: sec9754, Transport: RoCE,
		Title: "a duplicate READ for the tail of a 3-packet READ is answered from its own PSN with that range",
		Setup: Setup{Attr: mtu256, MRs: []MR{{Name: DefaultMR, Len: 4096, Access: allRemote, Fill: pattern(251, 3)}}},
		Steps: []Step{
			Send{{Op: wire.RCReadRequest, PSN: 0, RETH: &RETH{Len: 700}}},
			Expect{Want: []Check{IsOp(wire.RCReadResponseFirst), PSNIs(0), PayloadLen(256)}},
			Expect{Want: []Check{IsOp(wire.RCReadResponseMiddle), PSNIs(1), PayloadLen(256)}},
			Expect{Want: []Check{IsOp(wire.RCReadResponseLast), PSNIs(2), PayloadLen(188)}},
			Send{{Op: wire.RCReadRequest, PSN: 1, RETH: &RETH{VA: AddrOf(DefaultMR, 256), Len: 444}}},
			// The spec text leaves the first replayed packet's opcode open
			// between First (a new response) and Middle (rxe, rnic: the
			// original response resumed); its PSN and bytes are fixed.
			Expect{Want: []Check{IsOp(wire.RCReadResponseFirst, wire.RCReadResponseMiddle), PSNIs(1), PayloadIs(fillAt(pattern(251, 3), 256, 256))}},
			Expect{Want: []Check{IsOp(wire.RCReadResponseLast), PSNIs(2), PayloadIs(fillAt(pattern(251, 3), 512, 188))}},
		},
		Break: &Break{Name: "a replay restarts at the original request's PSN", Fresh: OutFresh(func() FrameFault {
			return Nth(2, wire.RCReadResponseMiddle, ShiftPSN(-1))
		})},
	},
	{
		ID: "C9-105/atomic", Section: sec9754, Transport: RoCE, Needs: needAtomics,
		Title: "a duplicate FetchAdd returns the saved original value and does not add again",
		Setup: Setup{MRs: []MR{{Name: DefaultMR, Len: 64, Access: allRemote}}},
		Steps: []Step{
			WriteMem{MR: DefaultMR, Data: be64(100)},
			Send{{Op: wire.RCFetchAdd, PSN: 0, Atomic: &Atomic{SwapAdd: 5}}},
			Expect{Want: []Check{IsOp(wire.RCAtomicAck), PSNIs(0), IsACK(), MSNIs(1), OrigIs(100)}},
			Send{{Op: wire.RCFetchAdd, PSN: 0, Atomic: &Atomic{SwapAdd: 5}}},
			Expect{Want: []Check{IsOp(wire.RCAtomicAck), PSNIs(0), IsACK(), OrigIs(100)}},
			Memory{MR: DefaultMR, Want: be64(105)},
		},
		Break: &Break{Name: "a duplicate atomic executed again", Fresh: InFresh(func() FrameFault {
			return Nth(2, wire.RCFetchAdd, SetInPSN(1))
		})},
	},
}

func init() { Register(psnCases...) }
