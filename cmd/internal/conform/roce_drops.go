// RoCEv2 RC responder: packets it must drop silently — bad ICRC, P_Key
// mismatch, TVer not 0, pad counts that do not fit (IBTA Vol 1 Annex
// A17.3.3, §9.6.1.1 header checks, §9.2.4 pad, C9-34; §9.9.1 class D:
// silently dropped). Each ends with a good request at the same PSN, ACKed
// with MSN 1: the dropped one was neither executed nor counted.

package conform

import (
	"github.com/rnic/rnic/roce/wire"
)

// goodAfterDrop is the sentinel after a packet the DUT must drop.
func goodAfterDrop() []Step {
	return []Step{
		ExpectNone{What: "an answer to the bad packet"},
		Send{{Op: wire.RCSendOnly, PSN: 0, AckReq: true, Payload: pattern(12, 0x21)}},
		ack(0, 1),
		Poll{Want: []WCWant{recvOK(12)}},
		Memory{MR: DefaultMR, Want: pattern(12, 0x21)},
	}
}

// dropCase is a case whose bad SEND must be dropped.
func dropCase(id, section, title string, bad Pkt, brk *Break) Case {
	return Case{ID: id, Section: section, Title: title, Transport: RoCE, Setup: Setup{Recvs: 2},
		Steps: append([]Step{Send{bad}}, goodAfterDrop()...), Break: brk}
}

// badSend is a SEND Only at the expected PSN with edits.
func badSend(edit func(r *Run, h *wire.Headers), raw func(pkt []byte), badICRC bool) Pkt {
	return Pkt{Op: wire.RCSendOnly, PSN: 0, AckReq: true, Payload: pattern(12, 0x11), Edit: edit, Raw: raw, BadICRC: badICRC}
}

var dropCases = []Case{
	dropCase("A17.3.3/icrc", "IBTA Vol 1 Annex A17.3.3", "a packet with a bad ICRC is dropped silently",
		badSend(nil, nil, true),
		&Break{Name: "the DUT does not check the ICRC", In: ResealIn()}),
	dropCase("9.6.1.1/pkey", "IBTA Vol 1 §9.6.1.1", "a packet whose P_Key matches none of the port's is dropped silently",
		badSend(func(r *Run, h *wire.Headers) { h.BTH.PKey = 0x9234 }, nil, false),
		&Break{Name: "the DUT does not check the P_Key", In: EditIn(func(pkt []byte) { pkt[2], pkt[3] = 0xFF, 0xFF })}),
	dropCase("9.6.1.1/tver", "IBTA Vol 1 §9.6.1.1", "a packet with a transport header version other than 0 is dropped silently",
		badSend(func(r *Run, h *wire.Headers) { h.BTH.TVer = 1 }, nil, false),
		&Break{Name: "the DUT does not check TVer", In: EditIn(func(pkt []byte) { pkt[1] &^= 0x0F })}),
	dropCase("9.2.4/pad-over-payload", "IBTA Vol 1 §9.2.4", "a SEND whose pad count exceeds its payload (0 bytes, PadCnt 3) is dropped silently",
		Pkt{Op: wire.RCSendOnly, PSN: 0, AckReq: true, Raw: func(pkt []byte) { pkt[1] |= 0x30 }},
		&Break{Name: "the DUT ignores PadCnt", In: EditIn(func(pkt []byte) { pkt[1] &^= 0x30 })}),
	{
		ID: "9.2.4/pad-no-payload", Section: "IBTA Vol 1 §9.2.4", Transport: RoCE,
		Title: "a READ request (no payload) with a non-zero pad count is dropped silently",
		Setup: Setup{MRs: []MR{{Name: DefaultMR, Len: 4096, Access: allRemote, Fill: pattern(32, 9)}}},
		Steps: []Step{
			Send{{Op: wire.RCReadRequest, PSN: 0, RETH: &RETH{Len: 16}, Raw: func(pkt []byte) { pkt[1] |= 0x20 }}},
			ExpectNone{What: "an answer to the bad READ"},
			Send{{Op: wire.RCReadRequest, PSN: 0, RETH: &RETH{Len: 16}}},
			Expect{Want: []Check{IsOp(wire.RCReadResponseOnly), PSNIs(0), MSNIs(1), PayloadIs(pattern(16, 9))}},
		},
		Break: &Break{Name: "the DUT ignores PadCnt", In: EditIn(func(pkt []byte) { pkt[1] &^= 0x30 })},
	},
	dropCase("9.6.1.1/dest-qp", "IBTA Vol 1 §9.6.1.1", "a packet for a QP that does not exist is dropped silently",
		badSend(func(r *Run, h *wire.Headers) { h.BTH.DestQP = r.QP.QPN ^ 0x800000 }, nil, false),
		&Break{Name: "the DUT delivers by its only QP", Apply: nil, In: EditIn(func(pkt []byte) { pkt[5] ^= 0x80 })}),
}

func init() { Register(dropCases...) }
