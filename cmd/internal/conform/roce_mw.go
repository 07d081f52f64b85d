// RoCEv2 memory windows at the DUT's responder: the DUT binds a type 2B
// window (a BIND_MW work request through the case's QP) over part of a
// region that grants no remote right itself, and the tester reaches that
// part through the window's rkey; beyond the window, or once LOCAL_INV
// invalidated it, the same rkey is NAKed with a remote access error
// (IBTA Vol 1 §10.6.7, memory windows; §9.7.5.2, the NAK).

package conform

import (
	"fmt"

	"github.com/rnic/rnic/cmd/internal/conform/agentproto"
	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce/wire"
)

const secMW = "IBTA Vol 1 §10.6.7, §9.7.5.2"

// window is a window the DUT bound: its rkey and its first address.
type window struct {
	rkey uint32
	addr uint64
}

func windowVar(name string) string { return "mw:" + name }

// WindowRKey is the rkey of the window BindWindow bound as name.
func WindowRKey(name string) U32 {
	return func(r *Run) uint32 { w, _ := r.Vars[windowVar(name)].(window); return w.rkey }
}

// WindowAddr is the address off bytes into the window bound as name.
func WindowAddr(name string, off int64) U64 {
	return func(r *Run) uint64 { w, _ := r.Vars[windowVar(name)].(window); return uint64(int64(w.addr) + off) }
}

// BindWindow has the DUT allocate a type 2B window and bind it, by a
// BIND_MW WR on its QP, to Len bytes at Off of the named MR with Access,
// asking for the next key byte (ibv_inc_rkey); the bind must complete.
type BindWindow struct {
	Name, MR string
	Off, Len uint64
	Access   memory.Access
}

func (b BindWindow) Do(r *Run) error {
	mw, err := r.Agent.AllocMW(agentproto.AllocMW{PD: r.PD, Type: uint8(memory.Type2B)})
	if err != nil {
		return err
	}
	mr := r.MR(b.MR)
	w := window{rkey: verbs.IncRKey(mw.RKey), addr: mr.Addr + b.Off}
	wr := agentproto.SendWR{ID: 0xb1, Opcode: uint8(verbs.WRBindMW), Flags: uint8(verbs.SendSignaled), Bind: &agentproto.MWBind{
		Window: mw.RKey, MR: mr.LKey, Addr: w.addr, Length: b.Len, Access: uint32(b.Access), RKey: w.rkey,
	}}
	if err := dutLocalOp(r, wr, verbs.WCBindMW); err != nil {
		return err
	}
	r.Vars[windowVar(b.Name)] = w
	r.Note("window %s: rkey %#x", b.Name, w.rkey)
	return nil
}

func (b BindWindow) String() string {
	return fmt.Sprintf("DUT binds window %s to %s[%d:+%d] (%v)", b.Name, b.MR, b.Off, b.Len, b.Access)
}

// InvalidateWindow has the DUT post LOCAL_INV of the window's rkey; it
// must complete.
type InvalidateWindow struct{ Name string }

func (i InvalidateWindow) Do(r *Run) error {
	wr := agentproto.SendWR{ID: 0xb2, Opcode: uint8(verbs.WRLocalInv), Flags: uint8(verbs.SendSignaled), InvRKey: WindowRKey(i.Name)(r)}
	return dutLocalOp(r, wr, verbs.WCLocalInv)
}

func (i InvalidateWindow) String() string { return "DUT invalidates window " + i.Name + " (LOCAL_INV)" }

// dutLocalOp posts a local operation on the DUT's QP and wants it
// completed successfully with opcode op.
func dutLocalOp(r *Run, wr agentproto.SendWR, op verbs.WCOpcode) error {
	if err := r.Agent.PostSend(r.QP.H, wr); err != nil {
		return err
	}
	wcs, err := r.Agent.PollCQ(r.CQ, 1, r.Bound(DefaultWithin))
	if err != nil {
		return err
	}
	if len(wcs) == 0 {
		return fmt.Errorf("no completion of %v within %v", verbs.WROpcode(wr.Opcode), r.Bound(DefaultWithin))
	}
	if wc := wcs[0]; wc.ID != wr.ID || verbs.WCStatus(wc.Status) != verbs.WCSuccess || verbs.WCOpcode(wc.Opcode) != op {
		return fmt.Errorf("%v completed as %s", verbs.WROpcode(wr.Opcode), wcString(wc))
	}
	return nil
}

// needWindows: the DUT must offer type 2B windows.
func needWindows(info agentproto.DeviceInfo) string {
	if !info.MWType2B {
		return "type 2B memory windows (max_mw 0, or an agent without them)"
	}
	return ""
}

// windowMR is a region that grants no remote right of its own: every
// remote access in these cases goes through a window.
var windowMR = Setup{MRs: []MR{{Name: DefaultMR, Len: 4096, Access: memory.LocalWrite | memory.MWBind}}}

// bindW binds window "w" over [1024, 2048) of DefaultMR for remote write.
var bindW = BindWindow{Name: "w", MR: DefaultMR, Off: 1024, Len: 1024, Access: memory.RemoteWrite}

// rethRKeyByte is the offset of the key byte of a RETH's R_Key in the
// transport packet (BTH 12 bytes, then VA 8 and R_Key 4, big-endian).
const rethRKeyByte = 12 + 8 + 3

var windowCases = []Case{
	{
		ID: "10.6.7/mw-write", Section: secMW, Transport: RoCE,
		Title: "a WRITE through a bound type 2B window's rkey lands in the window and is ACKed",
		Setup: windowMR, Needs: needWindows,
		Steps: []Step{
			bindW,
			Send{{Op: wire.RCWriteOnly, PSN: 0, AckReq: true, Payload: pattern(64, 1), RETH: &RETH{VA: WindowAddr("w", 0), RKey: WindowRKey("w"), Len: 64}}},
			ack(0, 1),
			Memory{MR: DefaultMR, Off: 1024, Want: pattern(64, 1)},
		},
		Break: &Break{Name: "the DUT sees another key byte in the window's rkey", In: editInOp(wire.RCWriteOnly, func(pkt []byte) {
			pkt[rethRKeyByte] ^= 0xff
		})},
	},
	{
		ID: "10.6.7/mw-invalidated", Section: secMW, Transport: RoCE,
		Title: "a WRITE through a window's rkey after LOCAL_INV is NAKed with a remote access error and writes nothing",
		Setup: windowMR, Needs: needWindows,
		Steps: []Step{
			bindW,
			InvalidateWindow{Name: "w"},
			Send{{Op: wire.RCWriteOnly, PSN: 0, AckReq: true, Payload: pattern(64, 1), RETH: &RETH{VA: WindowAddr("w", 0), RKey: WindowRKey("w"), Len: 64}}},
			nak(0, wire.NAKRemoteAccess),
			Memory{MR: DefaultMR, Off: 1024, Want: make([]byte, 64)},
			qpErr,
		},
		Break: &Break{Name: "access errors NAKed as invalid requests", Out: RewriteNAK(wire.NAKRemoteAccess, wire.NAKInvalidRequest)},
	},
	{
		ID: "10.6.7/mw-bounds", Section: secMW, Transport: RoCE,
		Title: "a WRITE through a window running past the window's end, inside its region, is NAKed with a remote access error",
		Setup: windowMR, Needs: needWindows,
		Steps: []Step{
			bindW,
			Send{{Op: wire.RCWriteOnly, PSN: 0, AckReq: true, Payload: pattern(64, 1), RETH: &RETH{VA: WindowAddr("w", 1000), RKey: WindowRKey("w"), Len: 64}}},
			nak(0, wire.NAKRemoteAccess),
			Memory{MR: DefaultMR, Off: 2024, Want: make([]byte, 48)},
		},
		Deviations: []Deviation{{Kind: "rxe", Ref: "cmd/internal/conform/README.md: rxe windows",
			Note: "rxe checks an access through a window against the window's MR, not the window"}},
		Break: &Break{Name: "bounds errors NAKed as remote operational errors", Out: RewriteNAK(wire.NAKRemoteAccess, wire.NAKRemoteOpError)},
	},
}

func init() { Register(windowCases...) }
