// RoCEv2 RC responder: requests it must refuse, with the NAK each
// requires (IBTA Vol 1 §9.7.5.1.3 CHK_OP_SEQ, CHK_OP_VALID, CHK_LENGTH,
// CHK_RKEY; §9.7.5.2 NAK codes; §9.9.2 error classes).

package conform

import (
	"github.com/rnic/rnic/cmd/internal/conform/agentproto"
	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce/wire"
)

const (
	sec97513 = "IBTA Vol 1 §9.7.5.1.3"
	sec9752  = "IBTA Vol 1 §9.7.5.2"
)

// qpErr is the DUT's QP in ERR after a NAK that ends the connection
// (§9.9.3.1: responder class B/C errors put the QP in the error state).
var qpErr = QPState(6)

var errorCases = []Case{
	{
		ID: "9.7.5.1.3/missing-first", Section: sec97513, Transport: RoCE,
		Title: "a WRITE Middle with no WRITE First before it is NAKed as an invalid request",
		Setup: Setup{Attr: mtu256},
		Steps: []Step{
			Send{{Op: wire.RCWriteMiddle, PSN: 0, AckReq: true, Payload: pattern(256, 1)}},
			nak(0, wire.NAKInvalidRequest),
			PollNone{},
			qpErr,
			Event{Type: verbs.EventQPReqErr},
		},
		Break: &Break{Name: "opcode sequence errors NAKed as remote access errors",
			Out: RewriteNAK(wire.NAKInvalidRequest, wire.NAKRemoteAccess)},
	},
	{
		ID: "9.7.5.1.3/missing-last", Section: sec97513, Transport: RoCE,
		Title: "a SEND Only while a SEND message is open (its Last missing) is NAKed as an invalid request",
		Setup: Setup{Attr: mtu256, Recvs: 2},
		Steps: []Step{
			Send{
				{Op: wire.RCSendFirst, PSN: 0, Payload: pattern(256, 1)},
				{Op: wire.RCSendOnly, PSN: 1, AckReq: true, Payload: pattern(16, 2)},
			},
			nak(1, wire.NAKInvalidRequest),
		},
		Break: &Break{Name: "the DUT sees the SEND First as a SEND Only", In: editInOp(wire.RCSendFirst, func(pkt []byte) {
			pkt[0] = byte(wire.RCSendOnly)
		})},
	},
	{
		ID: "9.7.5.1.3/write-in-send", Section: sec97513, Transport: RoCE,
		Title: "a WRITE Last continuing a SEND First is NAKed as an invalid request",
		Setup: Setup{Attr: mtu256, Recvs: 1},
		Steps: []Step{
			Send{
				{Op: wire.RCSendFirst, PSN: 0, Payload: pattern(256, 1)},
				{Op: wire.RCWriteLast, PSN: 1, AckReq: true, Payload: pattern(16, 2)},
			},
			nak(1, wire.NAKInvalidRequest),
		},
		Break: &Break{Name: "the DUT sees a SEND Last", In: editInOp(wire.RCWriteLast, func(pkt []byte) {
			pkt[0] = byte(wire.RCSendLast)
		})},
	},
	{
		ID: "9.7.5.2/rkey-invalid", Section: sec9752, Transport: RoCE,
		Title: "a WRITE with an R_Key that names no region is NAKed with a remote access error",
		Steps: []Step{
			Send{{Op: wire.RCWriteOnly, PSN: 0, AckReq: true, Payload: pattern(16, 1), RETH: &RETH{RKey: BadRKey(DefaultMR), Len: 16}}},
			nak(0, wire.NAKRemoteAccess),
			Memory{MR: DefaultMR, Want: make([]byte, 16)},
			qpErr,
			// §11.6.3.1: a responder's access violation is the QP's
			// affiliated asynchronous error.
			Event{Type: verbs.EventQPAccessErr},
		},
		Break: &Break{Name: "access errors NAKed as invalid requests", Out: RewriteNAK(wire.NAKRemoteAccess, wire.NAKInvalidRequest)},
	},
	{
		ID: "9.7.5.2/write-bounds", Section: sec9752, Transport: RoCE,
		Title: "a WRITE running past the region's end is NAKed with a remote access error and writes nothing",
		Steps: []Step{
			Send{{Op: wire.RCWriteOnly, PSN: 0, AckReq: true, Payload: pattern(32, 1), RETH: &RETH{VA: AddrOf(DefaultMR, 4096-16), Len: 32}}},
			nak(0, wire.NAKRemoteAccess),
			Memory{MR: DefaultMR, Off: 4096 - 16, Want: make([]byte, 16)},
		},
		Break: &Break{Name: "bounds errors NAKed as remote operational errors", Out: RewriteNAK(wire.NAKRemoteAccess, wire.NAKRemoteOpError)},
	},
	{
		ID: "9.7.5.2/read-bounds", Section: sec9752, Transport: RoCE,
		Title: "a READ starting before the region is NAKed with a remote access error",
		Steps: []Step{
			Send{{Op: wire.RCReadRequest, PSN: 0, RETH: &RETH{VA: AddrOf(DefaultMR, -8), Len: 16}}},
			nak(0, wire.NAKRemoteAccess),
		},
		Break: &Break{Name: "bounds errors NAKed as invalid requests", Out: RewriteNAK(wire.NAKRemoteAccess, wire.NAKInvalidRequest)},
	},
	{
		ID: "9.7.5.2/mr-access", Section: sec9752, Transport: RoCE,
		Title: "a WRITE to a region registered without remote write is NAKed with a remote access error",
		Setup: Setup{MRs: []MR{{Name: DefaultMR, Len: 4096, Access: memory.LocalWrite | memory.RemoteRead}}},
		Steps: []Step{
			Send{{Op: wire.RCWriteOnly, PSN: 0, AckReq: true, Payload: pattern(16, 1), RETH: &RETH{Len: 16}}},
			nak(0, wire.NAKRemoteAccess),
			Memory{MR: DefaultMR, Want: make([]byte, 16)},
		},
		Break: &Break{Name: "the DUT sees a READ instead", In: editInOp(wire.RCWriteOnly, func(pkt []byte) {
			pkt[0] = byte(wire.RCReadRequest)
		})},
	},
	{
		ID: "9.7.5.2/atomic-access", Section: sec9752, Transport: RoCE,
		Title: "a FetchAdd on a region registered without remote atomic is NAKed with a remote access error",
		Setup: Setup{MRs: []MR{{Name: DefaultMR, Len: 64, Access: memory.LocalWrite | memory.RemoteRead | memory.RemoteWrite}}},
		Needs: needAtomics,
		Steps: []Step{
			Send{{Op: wire.RCFetchAdd, PSN: 0, Atomic: &Atomic{SwapAdd: 1}}},
			nak(0, wire.NAKRemoteAccess),
			Memory{MR: DefaultMR, Want: make([]byte, 8)},
		},
		Break: &Break{Name: "access errors NAKed as invalid requests", Out: RewriteNAK(wire.NAKRemoteAccess, wire.NAKInvalidRequest)},
	},
	{
		ID: "9.7.5.2/qp-access", Section: sec9752, Transport: RoCE,
		Title: "a WRITE to a QP whose access flags lack remote write is NAKed as an invalid request",
		Setup: Setup{Attr: func(a *QPAttrs) { a.Access = memory.RemoteRead }},
		Steps: []Step{
			Send{{Op: wire.RCWriteOnly, PSN: 0, AckReq: true, Payload: pattern(16, 1), RETH: &RETH{Len: 16}}},
			nak(0, wire.NAKInvalidRequest),
			Memory{MR: DefaultMR, Want: make([]byte, 16)},
		},
		Break: &Break{Name: "QP access errors NAKed as remote access errors", Out: RewriteNAK(wire.NAKInvalidRequest, wire.NAKRemoteAccess)},
	},
	{
		ID: "9.7.5.1.3/send-over-mtu", Section: sec97513, Transport: RoCE,
		Title: "a SEND Only longer than the path MTU is NAKed as an invalid request",
		Setup: Setup{Attr: mtu256, Recvs: 1},
		Steps: []Step{
			Send{{Op: wire.RCSendOnly, PSN: 0, AckReq: true, Payload: pattern(260, 1)}},
			nak(0, wire.NAKInvalidRequest),
		},
		Break: &Break{Name: "length errors NAKed as remote operational errors", Out: RewriteNAK(wire.NAKInvalidRequest, wire.NAKRemoteOpError)},
	},
	{
		ID: "9.7.5.1.3/write-length", Section: sec97513, Transport: RoCE,
		Title: "a WRITE Only whose payload is shorter than its RETH length is NAKed as an invalid request",
		Steps: []Step{
			Send{{Op: wire.RCWriteOnly, PSN: 0, AckReq: true, Payload: pattern(16, 1), RETH: &RETH{Len: 24}}},
			nak(0, wire.NAKInvalidRequest),
			Memory{MR: DefaultMR, Want: make([]byte, 16)},
		},
		Break: &Break{Name: "the DUT reads the RETH length as the payload's", In: editInOp(wire.RCWriteOnly, func(pkt []byte) {
			pkt[wire.BTHLen+15] = 16 // the RETH's DMA length, low byte
		})},
	},
	{
		ID: "9.7.5.1.3/recv-too-small", Section: sec97513, Transport: RoCE,
		Title: "a SEND longer than the receive buffer is NAKed as an invalid request and completes the receive in error",
		Setup: Setup{Recvs: 1, RecvLen: 16},
		Steps: []Step{
			Send{{Op: wire.RCSendOnly, PSN: 0, AckReq: true, Payload: pattern(32, 1)}},
			nak(0, wire.NAKInvalidRequest),
			Poll{Want: []WCWant{{Status: 1 /* LOC_LEN_ERR */}}},
		},
		Break: &Break{Name: "length errors NAKed as remote operational errors", Out: RewriteNAK(wire.NAKInvalidRequest, wire.NAKRemoteOpError)},
	},
	{
		ID: "9.7.5.2/rd-atomic-none", Section: sec9752, Transport: RoCE,
		Title: "a READ to a QP with max_dest_rd_atomic 0 is NAKed as an invalid request",
		Setup: Setup{Attr: func(a *QPAttrs) { a.MaxDestRdAtomic = 0 }},
		Steps: []Step{
			Send{{Op: wire.RCReadRequest, PSN: 0, RETH: &RETH{Len: 16}}},
			nak(0, wire.NAKInvalidRequest),
		},
		Break: &Break{Name: "the NAK is lost", Out: DropOps(wire.RCAck)},
	},
}

func needAtomics(info agentproto.DeviceInfo) string {
	if !info.Atomics {
		return "the DUT offers no atomic operations"
	}
	return ""
}

func init() { Register(errorCases...) }
