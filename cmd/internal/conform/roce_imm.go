// RoCEv2 RC responder: immediate data and the QP states that receive
// (IBTA Vol 1 §9.4.1, §9.4.2, §10.3.1).

package conform

import (
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce/wire"
)

var immCases = []Case{
	{
		ID: "9.4.1/send-imm", Section: "IBTA Vol 1 §9.4.1", Transport: RoCE,
		Title: "a SEND with immediate completes its receive with the immediate data",
		Setup: Setup{Recvs: 1},
		Steps: []Step{
			Send{{Op: wire.RCSendOnlyImm, PSN: 0, AckReq: true, Payload: pattern(20, 1), Imm: 0xCAFEF00D}},
			ack(0, 1),
			Poll{Want: []WCWant{{Status: verbs.WCSuccess, Opcode: Is(verbs.WCRecv), Len: Is(uint32(20)),
				Imm: Is(uint32(0xCAFEF00D)), Flags: Is(verbs.WCFlagWithImm)}}},
		},
		Break: &Break{Name: "the immediate data is corrupted", In: editInOp(wire.RCSendOnlyImm, func(pkt []byte) {
			pkt[wire.BTHLen] ^= 0xFF
		})},
	},
	{
		ID: "9.4.2/write-imm", Section: "IBTA Vol 1 §9.4.2", Transport: RoCE,
		Title: "a WRITE with immediate writes memory and consumes a receive with the immediate data and the length",
		Setup: Setup{Recvs: 1, MRs: []MR{{Name: DefaultMR, Len: 4096, Access: allRemote}, {Name: "target", Len: 256, Access: allRemote}}},
		Steps: []Step{
			Send{{Op: wire.RCWriteOnlyImm, PSN: 0, AckReq: true, Payload: pattern(48, 5), Imm: 0x01020304,
				RETH: &RETH{VA: AddrOf("target", 8), RKey: RKeyOf("target"), Len: 48}}},
			ack(0, 1),
			Poll{Want: []WCWant{{Status: verbs.WCSuccess, Opcode: Is(verbs.WCRecvRDMAWithImm), Len: Is(uint32(48)),
				Imm: Is(uint32(0x01020304)), Flags: Is(verbs.WCFlagWithImm)}}},
			Memory{MR: "target", Off: 8, Want: pattern(48, 5)},
		},
		Break: &Break{Name: "the DUT sees a plain WRITE", In: editInOp(wire.RCWriteOnlyImm, func(pkt []byte) {
			pkt[0] = byte(wire.RCWriteOnly) // the ImmDt now reads as 4 more bytes of payload
			pkt[wire.BTHLen+15] += 4
		})},
	},
	{
		ID: "10.3.1/rtr-receives", Section: "IBTA Vol 1 §10.3.1", Transport: RoCE,
		Title: "a QP in RTR (not yet RTS) executes and ACKs incoming requests",
		Setup: Setup{Recvs: 1, State: verbs.QPSRTR},
		Steps: []Step{
			QPState(verbs.QPSRTR),
			Send{{Op: wire.RCSendOnly, PSN: 0, AckReq: true, Payload: pattern(16, 3)}},
			ack(0, 1),
			Poll{Want: []WCWant{recvOK(16)}},
		},
		Break: &Break{Name: "the ACK is lost", Out: DropOps(wire.RCAck)},
	},
}

func init() { Register(immCases...) }
