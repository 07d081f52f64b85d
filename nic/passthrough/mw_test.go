//go:build verbs

package passthrough

import (
	"errors"
	"testing"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
)

// mwLoop is a loop whose device has Type 2B windows, with an MR over its
// buffer that allows binding them, or skips.
func mwLoop(t *testing.T) (*loop, *mr) {
	d := openDevice(t)
	if d.attr.MaxMW == 0 || d.attr.DeviceCapFlags&verbs.DeviceMemWindowType2B == 0 {
		t.Skipf("%s has no type 2B memory windows (max_mw %d)", d.name, d.attr.MaxMW)
	}
	l := newLoop(t, d, 8)
	m, err := d.RegMR(l.pd, l.mem, memory.LocalWrite|memory.MWBind)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Dereg() })
	return l, m.(*mr)
}

// bind2B binds w over n bytes of l's buffer at off with a BIND_MW WR on B
// and returns the window's new rkey.
func bind2B(t *testing.T, l *loop, m *mr, w *mw, id uint64, off, n int) uint32 {
	t.Helper()
	wr := &verbs.SendWR{ID: id, Opcode: verbs.WRBindMW, Flags: verbs.SendSignaled, Bind: verbs.MWBind{
		Window: w.RKey(), MR: m.LKey(), Addr: m.Addr() + uint64(off), Length: uint64(n),
		Access: memory.RemoteRead, RKey: verbs.IncRKey(w.RKey()),
	}}
	if err := l.b.PostSend(wr); err != nil {
		t.Fatal(err)
	}
	wc := waitWCs(t, l.cq, 1)[0]
	if wc.WRID != id || wc.Status != verbs.WCSuccess || wc.Opcode != verbs.WCBindMW {
		t.Fatalf("BIND_MW %d: %+v, want a BIND_MW success", id, wc)
	}
	if w.RKey() != wr.Bind.RKey {
		t.Fatalf("window rkey %#x after the bind, want %#x", w.RKey(), wr.Bind.RKey)
	}
	return wr.Bind.RKey
}

// TestMWRebind2B: a Type 2B window bound, invalidated and bound again,
// each bind naming it by its rkey of the moment. The device checks the key
// a BIND_MW WQE names against the window's current one, which the backend
// keeps in the provider's ibv_mw for it; the second binding moves the
// window, and only the rkey of the last bind reaches memory.
func TestMWRebind2B(t *testing.T) {
	l, m := mwLoop(t)
	x, err := l.d.AllocMW(l.pd, memory.Type2B)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Dealloc()
	w := x.(*mw)
	// A BIND_MW naming no window of the device fails at post time.
	bad := &verbs.SendWR{ID: 9, Opcode: verbs.WRBindMW, Bind: verbs.MWBind{Window: w.RKey() ^ 0x100, MR: m.LKey(), Length: 8}}
	if err := l.b.PostSend(bad); !errors.Is(err, verbs.ErrInvalid) {
		t.Fatalf("BIND_MW of an unknown window: %v, want ErrInvalid", err)
	}
	copy(l.mem[65536:], "first binding")
	copy(l.mem[131072:], "second binding")
	k1 := bind2B(t, l, m, w, 1, 65536, 4096)
	// A Type 2B window is bound again only once invalidated (rxe: from
	// the free state); the invalidation keeps its rkey.
	inv := &verbs.SendWR{ID: 5, Opcode: verbs.WRLocalInv, Flags: verbs.SendSignaled, InvRKey: k1}
	if err := l.b.PostSend(inv); err != nil {
		t.Fatal(err)
	}
	if wc := byID(t, waitWCs(t, l.cq, 1))[5]; wc.Opcode != verbs.WCLocalInv {
		t.Fatalf("LOCAL_INV: %+v", wc)
	}
	k2 := bind2B(t, l, m, w, 2, 131072, 4096)
	rd := &verbs.SendWR{ID: 3, Opcode: verbs.WRRDMARead, Flags: verbs.SendSignaled, SGL: l.sge(8192, 14),
		RemoteAddr: m.Addr() + 131072, RKey: k2}
	if err := l.a.PostSend(rd); err != nil {
		t.Fatal(err)
	}
	byID(t, waitWCs(t, l.cq, 1))
	if got := string(l.mem[8192 : 8192+14]); got != "second binding" {
		t.Fatalf("READ through the rebound window: %q", got)
	}
	rd = &verbs.SendWR{ID: 4, Opcode: verbs.WRRDMARead, Flags: verbs.SendSignaled, SGL: l.sge(8192, 13),
		RemoteAddr: m.Addr() + 65536, RKey: k1}
	if err := l.a.PostSend(rd); err != nil {
		t.Fatal(err)
	}
	if wc := waitWCs(t, l.cq, 1)[0]; wc.WRID != 4 || wc.Status != verbs.WCRemAccessErr {
		t.Fatalf("READ through the first binding's rkey: %+v, want REM_ACCESS_ERR", wc)
	}
}
