// RoCEv2 RC responder: RNR NAKs, MSN and credits in the AETH, zero-length
// RDMA, SEND with Invalidate (IBTA Vol 1 §9.7.5.2.8, §9.7.6.1, §9.7.7.2,
// §9.4.3, C9-88, C9-148).

package conform

import (
	"fmt"

	"github.com/rnic/rnic/roce/wire"
)

// CreditsIs wants an ACK reporting exactly n credits.
func CreditsIs(n int) Check {
	return FrameFunc(fmt.Sprintf("credits %d", n), func(r *Run, f *Frame) error {
		s, err := aeth(f)
		if err != nil {
			return err
		}
		got, unlimited := s.Credits()
		if s.Type() != wire.AckTypeACK || unlimited || got != n {
			return fmt.Errorf("AETH %v, want ACK credits=%d", s, n)
		}
		return nil
	})
}

// setRETHLen sets the DMA length of READ and WRITE requests into the DUT.
func setRETHLen(n byte) FrameFault {
	return EditIn(func(pkt []byte) {
		if wire.Opcode(pkt[0]).Info().Has(wire.HdrRETH) {
			pkt[wire.BTHLen+15] = n
		}
	})
}

var respCases = []Case{
	{
		ID: "9.7.5.2.8/rnr", Section: "IBTA Vol 1 §9.7.5.2.8", Transport: RoCE,
		Title: "a SEND with no receive posted gets an RNR NAK carrying the QP's min_rnr_timer, and succeeds when resent",
		Setup: Setup{Attr: func(a *QPAttrs) { a.MinRNRTimer = 9 }},
		Steps: []Step{
			Send{{Op: wire.RCSendOnly, PSN: 0, AckReq: true, Payload: pattern(8, 1)}},
			Expect{Want: []Check{IsOp(wire.RCAck), PSNIs(0), IsRNRNAK()}},
			PostRecv{ID: 1, Seg: Seg{MR: DefaultMR, Len: 64}},
			Send{{Op: wire.RCSendOnly, PSN: 0, AckReq: true, Payload: pattern(8, 1)}},
			ack(0, 1),
			Poll{Want: []WCWant{recvOK(8)}},
		},
		Break: &Break{Name: "RNR NAKs carry another timer", Out: RewriteAETH(func(s wire.Syndrome, m uint32) (wire.Syndrome, uint32) {
			if s.Type() == wire.AckTypeRNRNAK {
				s = wire.RNRNAKSyndrome(s.Value() + 1)
			}
			return s, m
		})},
	},
	{
		ID: "9.7.5.2.8/rnr-write-imm", Section: "IBTA Vol 1 §9.7.5.2.8", Transport: RoCE,
		Title: "a WRITE with immediate and no receive posted gets an RNR NAK",
		Setup: Setup{Attr: func(a *QPAttrs) { a.MinRNRTimer = 3 }},
		Steps: []Step{
			Send{{Op: wire.RCWriteOnlyImm, PSN: 0, AckReq: true, Payload: pattern(8, 1), RETH: &RETH{Len: 8}, Imm: 0x1234}},
			Expect{Want: []Check{IsOp(wire.RCAck), PSNIs(0), IsRNRNAK()}},
			PollNone{},
		},
		Break: &Break{Name: "the DUT sees a plain WRITE", In: editInOp(wire.RCWriteOnlyImm, func(pkt []byte) {
			pkt[0] = byte(wire.RCWriteOnly)
		})},
	},
	{
		ID: "C9-148/msn", Section: "IBTA Vol 1 §9.7.6.1.1", Transport: RoCE,
		Title: "the MSN counts messages: unchanged by a WRITE First, +1 at its Last, a SEND, and a READ",
		Setup: Setup{Attr: mtu256, Recvs: 1},
		Steps: []Step{
			Send{{Op: wire.RCWriteFirst, PSN: 0, AckReq: true, Payload: pattern(256, 1), RETH: &RETH{Len: 300}}},
			ack(0, 0),
			Send{{Op: wire.RCWriteLast, PSN: 1, AckReq: true, Payload: pattern(44, 2)}},
			ack(1, 1),
			Send{{Op: wire.RCSendOnly, PSN: 2, AckReq: true, Payload: pattern(4, 3)}},
			ack(2, 2),
			Send{{Op: wire.RCReadRequest, PSN: 3, RETH: &RETH{Len: 8}}},
			Expect{Want: []Check{IsOp(wire.RCReadResponseOnly), PSNIs(3), IsACK(), MSNIs(3)}},
		},
		Break: &Break{Name: "the MSN moves at every packet", Out: RewriteAETH(func(s wire.Syndrome, m uint32) (wire.Syndrome, uint32) {
			if m == 0 {
				m = 1
			}
			return s, m
		})},
	},
	{
		ID: "9.7.7.2/credits", Section: "IBTA Vol 1 §9.7.7.2", Transport: RoCE,
		Title: "an ACK carries the receive credits left (4 posted, 1 used: 3)",
		Setup: Setup{Recvs: 4},
		Steps: []Step{
			Send{{Op: wire.RCSendOnly, PSN: 0, AckReq: true, Payload: pattern(8, 1)}},
			Expect{Want: []Check{IsOp(wire.RCAck), PSNIs(0), CreditsIs(3)}},
		},
		Deviations: []Deviation{{Kind: "rxe", Ref: "cmd/internal/conform/README.md: rxe credits", Note: "rxe sends no credits (code 31)"}},
		Break: &Break{Name: "ACKs without credits", Out: RewriteAETH(func(s wire.Syndrome, m uint32) (wire.Syndrome, uint32) {
			if s.Type() == wire.AckTypeACK {
				s = wire.ACKSyndrome(wire.CreditsUnlimited)
			}
			return s, m
		})},
	},
	{
		ID: "C9-88/zero-write", Section: "IBTA Vol 1 §9.4.3", Transport: RoCE,
		Title: "a zero-length WRITE is ACKed without checking its R_Key and VA",
		Steps: []Step{
			Send{{Op: wire.RCWriteOnly, PSN: 0, AckReq: true, RETH: &RETH{VA: Val64(0), RKey: BadRKey(DefaultMR), Len: 0}}},
			ack(0, 1),
			PollNone{},
		},
		Break: &Break{Name: "the DUT sees a 4-byte WRITE", In: setRETHLen(4)},
	},
	{
		ID: "C9-88/zero-read", Section: "IBTA Vol 1 §9.4.3", Transport: RoCE,
		Title: "a zero-length READ is answered by one READ Response Only without payload, whatever its R_Key",
		Steps: []Step{
			Send{{Op: wire.RCReadRequest, PSN: 0, RETH: &RETH{VA: Val64(0), RKey: BadRKey(DefaultMR), Len: 0}}},
			Expect{Want: []Check{IsOp(wire.RCReadResponseOnly), PSNIs(0), IsACK(), MSNIs(1), PayloadLen(0)}},
		},
		Break: &Break{Name: "the DUT sees a 4-byte READ", In: setRETHLen(4)},
	},
	{
		ID: "C9-88/zero-write-valid", Section: "IBTA Vol 1 §9.4.3", Transport: RoCE,
		Title: "a zero-length WRITE with a valid key leaves memory alone and moves the MSN",
		Steps: []Step{
			WriteMem{MR: DefaultMR, Data: pattern(8, 0x55)},
			Send{{Op: wire.RCWriteOnly, PSN: 0, AckReq: true, RETH: &RETH{Len: 0}}},
			ack(0, 1),
			Memory{MR: DefaultMR, Want: pattern(8, 0x55)},
		},
		Break: &Break{Name: "the ACK is lost", Out: DropOps(wire.RCAck)},
	},
	{
		ID: "9.4.1.1/send-inv-plain-mr", Section: "IBTA Vol 1 §9.4.1.1", Transport: RoCE,
		Title: "a SEND with Invalidate naming a region remote invalidation may not end (not a fast-register MR) is NAKed as an invalid request and its receive completes in error",
		Setup: Setup{Recvs: 1, MRs: []MR{{Name: DefaultMR, Len: 4096, Access: allRemote}, {Name: "target", Len: 64, Access: allRemote}}},
		Steps: []Step{
			Send{{Op: wire.RCSendOnlyInv, PSN: 0, AckReq: true, Payload: pattern(8, 1), Inv: RKeyOf("target")}},
			nak(0, wire.NAKInvalidRequest),
			Poll{Want: []WCWant{{AnyError: true, ID: Is(uint64(1))}}},
		},
		Break: &Break{Name: "the DUT sees a plain SEND", In: editInOp(wire.RCSendOnlyInv, func(pkt []byte) {
			pkt[0] = byte(wire.RCSendOnly) // the IETH now reads as 4 bytes of payload
		})},
	},
}

func init() { Register(respCases...) }
