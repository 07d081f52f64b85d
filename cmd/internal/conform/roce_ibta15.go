// RoCEv2 RC responder: IBTA Vol 1 1.5's ATOMIC WRITE and FLUSH, with the
// answers and checks Linux rxe gives them since 6.2 (an RDMA READ Response
// Only without payload; remote write rights for ATOMIC WRITE, each
// placement type's rights on QP and region for FLUSH).

package conform

import (
	"github.com/rnic/rnic/cmd/internal/conform/agentproto"
	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/roce/wire"
)

const secIBTA15 = "IBTA Vol 1 1.5 (ATOMIC WRITE, FLUSH)"

// flushRights are both FLUSH placement rights.
const flushRights = memory.FlushGlobal | memory.FlushPersistent

// respOnly expects the empty RDMA READ Response Only that answers a FLUSH
// or an ATOMIC WRITE at rel, an ACK with msn.
func respOnly(rel int, msn uint32) Expect {
	return Expect{Want: []Check{IsOp(wire.RCReadResponseOnly), PSNIs(rel), IsACK(), MSNIs(msn), PayloadLen(0)}}
}

// editIn edits the requests of opcode op into the DUT: b is the packet
// from the BTH on.
func editIn(op wire.Opcode, edit func(b []byte)) FrameFault {
	return EditIn(func(pkt []byte) {
		if wire.Opcode(pkt[0]) == op {
			edit(pkt)
		}
	})
}

// The offsets in an ATOMIC WRITE (BTH, RETH, the 8 bytes) and a FLUSH
// (BTH, FETH, RETH).
const (
	awVA      = wire.BTHLen
	awPayload = wire.BTHLen + wire.RETHLen
	flushFETH = wire.BTHLen + 3 // the FETH's last byte: selectivity, placement type
)

var ibta15Value = []byte("ATOMICWR")

var ibta15Cases = []Case{
	{
		ID: "1.5/atomic-write", Section: secIBTA15, Transport: RoCE, Needs: needAtomicWrite,
		Title: "an ATOMIC WRITE places its 8 bytes as sent and is answered by an empty RDMA READ Response Only",
		Setup: Setup{MRs: []MR{{Name: DefaultMR, Len: 64, Access: allRemote}}},
		Steps: []Step{
			Send{{Op: wire.RCAtomicWrite, PSN: 0, RETH: &RETH{VA: AddrOf(DefaultMR, 8), Len: 8}, Payload: ibta15Value}},
			respOnly(0, 1),
			Memory{MR: DefaultMR, Off: 8, Want: ibta15Value},
		},
		Break: &Break{Name: "the DUT places other bytes", In: editIn(wire.RCAtomicWrite, func(b []byte) {
			b[awPayload] ^= 0xFF
		})},
	},
	{
		ID: "1.5/atomic-write-duplicate", Section: secIBTA15, Transport: RoCE, Needs: needAtomicWrite,
		Title: "a duplicate ATOMIC WRITE is answered again but not executed again",
		Setup: Setup{MRs: []MR{{Name: DefaultMR, Len: 64, Access: allRemote}}},
		Steps: []Step{
			Send{{Op: wire.RCAtomicWrite, PSN: 0, RETH: &RETH{Len: 8}, Payload: ibta15Value}},
			respOnly(0, 1),
			WriteMem{MR: DefaultMR, Data: le64(0x5555)},
			Send{{Op: wire.RCAtomicWrite, PSN: 0, RETH: &RETH{Len: 8}, Payload: ibta15Value}},
			respOnly(0, 1),
			Memory{MR: DefaultMR, Want: le64(0x5555)},
		},
		Break: &Break{Name: "a duplicate ATOMIC WRITE executed again", Fresh: InFresh(func() FrameFault {
			return Nth(2, wire.RCAtomicWrite, SetInPSN(1))
		})},
	},
	{
		ID: "1.5/atomic-write-misaligned", Section: secIBTA15, Transport: RoCE, Needs: needAtomicWrite,
		Title: "an ATOMIC WRITE at an address not 8-byte aligned is NAKed as an invalid request and not executed",
		Setup: Setup{MRs: []MR{{Name: DefaultMR, Len: 64, Access: allRemote}}},
		Steps: []Step{
			Send{{Op: wire.RCAtomicWrite, PSN: 0, RETH: &RETH{VA: AddrOf(DefaultMR, 4), Len: 8}, Payload: ibta15Value}},
			nak(0, wire.NAKInvalidRequest),
			Memory{MR: DefaultMR, Want: make([]byte, 16)},
		},
		Break: &Break{Name: "the DUT aligns the address itself", In: editIn(wire.RCAtomicWrite, func(b []byte) {
			b[awVA+7] &^= 7
		})},
	},
	{
		ID: "1.5/flush-after-write", Section: secIBTA15, Transport: RoCE, Needs: needFlush,
		Title: "a FLUSH after a WRITE is answered by an empty RDMA READ Response Only, the WRITE placed",
		Setup: Setup{MRs: []MR{{Name: DefaultMR, Len: 256, Access: allRemote | flushRights}},
			Attr: func(a *QPAttrs) { a.Access |= flushRights }},
		Steps: []Step{
			Send{
				{Op: wire.RCWriteOnly, PSN: 0, RETH: &RETH{VA: AddrOf(DefaultMR, 32), Len: 8}, Payload: ibta15Value},
				{Op: wire.RCFlush, PSN: 1, AckReq: true, FETH: wire.MakeFETH(wire.FlushGlobalVisibility|wire.FlushPersistence, wire.FlushSelectRange),
					RETH: &RETH{VA: AddrOf(DefaultMR, 32), Len: 8}},
			},
			respOnly(1, 2),
			Memory{MR: DefaultMR, Off: 32, Want: ibta15Value},
		},
		Break: &Break{Name: "the DUT answers a FLUSH with a plain ACK", Out: EditOut(func(f *wire.Frame) {
			if f.Packet.Opcode() == wire.RCReadResponseOnly {
				f.Packet.BTH()[0] = byte(wire.RCAck)
			}
		})},
	},
	{
		ID: "1.5/flush-region-denied", Section: secIBTA15, Transport: RoCE, Needs: needFlush,
		Title: "a FLUSH for persistence of a region that grants global visibility only is NAKed as a remote access error",
		Setup: Setup{MRs: []MR{{Name: DefaultMR, Len: 64, Access: allRemote | memory.FlushGlobal}},
			Attr: func(a *QPAttrs) { a.Access |= flushRights }},
		Steps: []Step{
			Send{{Op: wire.RCFlush, PSN: 0, FETH: wire.MakeFETH(wire.FlushPersistence, wire.FlushSelectRange), RETH: &RETH{Len: 8}}},
			nak(0, wire.NAKRemoteAccess),
		},
		Break: &Break{Name: "the DUT flushes for global visibility instead", In: editIn(wire.RCFlush, func(b []byte) {
			b[flushFETH] = byte(wire.MakeFETH(wire.FlushGlobalVisibility, wire.FlushSelectRange))
		})},
	},
	{
		ID: "1.5/flush-qp-denied", Section: secIBTA15, Transport: RoCE, Needs: needFlush,
		Title: "a FLUSH to a QP that does not allow its placement type is NAKed as an invalid request",
		Setup: Setup{MRs: []MR{{Name: DefaultMR, Len: 64, Access: allRemote | flushRights}},
			Attr: func(a *QPAttrs) { a.Access |= memory.FlushGlobal }},
		Steps: []Step{
			Send{{Op: wire.RCFlush, PSN: 0, FETH: wire.MakeFETH(wire.FlushPersistence, wire.FlushSelectWholeMR), RETH: &RETH{}}},
			nak(0, wire.NAKInvalidRequest),
		},
		Break: &Break{Name: "the DUT flushes for global visibility instead", In: editIn(wire.RCFlush, func(b []byte) {
			b[flushFETH] = byte(wire.MakeFETH(wire.FlushGlobalVisibility, wire.FlushSelectWholeMR))
		})},
	},
}

func needAtomicWrite(info agentproto.DeviceInfo) string {
	if !info.AtomicWrite {
		return "the DUT offers no ATOMIC WRITE (IBTA 1.5; Linux rxe before 6.2)"
	}
	return ""
}

func needFlush(info agentproto.DeviceInfo) string {
	if !info.Flush {
		return "the DUT offers no FLUSH of both placement types (IBTA 1.5; Linux rxe before 6.2)"
	}
	return ""
}

func init() { Register(ibta15Cases...) }
