// Memory windows on the RoCE engine: binds executed by the send queue in
// order (BIND_MW completes with IBV_WC_BIND_MW, a bind that breaks one of
// the IBTA rules C10-72..75 / o10-37.2.30 with MW_BIND_ERR), remote access
// through a window's rkey limited to its range and rights, and invalidation
// by LOCAL_INV and by a peer's SEND with Invalidate, after which the rkey
// draws a Remote Access Error NAK.

package roce

import (
	"bytes"
	"testing"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
)

// windowOffset is where in B's buffer the windows of these tests start.
const windowOffset = 0x4000

// bindable registers n's buffer again, with MWBind, and allocates a window
// of typ: the MR to bind to and the window.
func bindable(t *testing.T, n *node, typ memory.WindowType, access memory.Access) (*memory.Region, *memory.Window) {
	t.Helper()
	mr, err := n.mem.Register(1, n.buf, 0x10000, access)
	if err != nil {
		t.Fatal(err)
	}
	w, err := n.mem.AllocWindow(1, typ)
	if err != nil {
		t.Fatal(err)
	}
	return mr, w
}

// bindWR is a BIND_MW of w to [windowOffset, +length) of mr, asking for the
// next key byte as ibv_inc_rkey does.
func bindWR(id uint64, mr *memory.Region, w *memory.Window, length uint64, access memory.Access) verbs.SendWR {
	return verbs.SendWR{ID: id, Opcode: verbs.WRBindMW, Bind: verbs.MWBind{
		Window: w.RKey(), MR: mr.LKey(), Addr: 0x10000 + windowOffset, Length: length, Access: access,
		RKey: verbs.IncRKey(w.RKey()),
	}}
}

func TestWindowType2BWriteRead(t *testing.T) {
	h := newHarness(t, defaultOpts())
	a, b := h.a, h.b
	mr, w := bindable(t, b, memory.Type2B, memory.LocalWrite|memory.MWBind)
	wr := bindWR(1, mr, w, 4096, memory.RemoteWrite|memory.RemoteRead)
	b.post(t, wr)
	h.run()
	wantWC(t, b.scq.take(), verbs.WC{WRID: 1, Opcode: verbs.WCBindMW})
	if w.RKey() != wr.Bind.RKey {
		t.Fatalf("window rkey %#x, the bind asked for %#x", w.RKey(), wr.Bind.RKey)
	}
	fill(a.buf[:4096], 3)
	a.post(t, verbs.SendWR{ID: 2, Opcode: verbs.WRRDMAWrite, SGL: []verbs.SGE{a.sge(0, 4096)},
		RemoteAddr: b.va(windowOffset), RKey: wr.Bind.RKey})
	a.post(t, verbs.SendWR{ID: 3, Opcode: verbs.WRRDMARead, SGL: []verbs.SGE{a.sge(0x8000, 100)},
		RemoteAddr: b.va(windowOffset + 10), RKey: wr.Bind.RKey})
	h.run()
	wantWC(t, a.scq.take(), verbs.WC{WRID: 2, Opcode: verbs.WCRDMAWrite}, verbs.WC{WRID: 3, Opcode: verbs.WCRDMARead, ByteLen: 100})
	if !bytes.Equal(b.buf[windowOffset:windowOffset+4096], a.buf[:4096]) {
		t.Fatal("WRITE through the window: data differs")
	}
	if !bytes.Equal(a.buf[0x8000:0x8000+100], a.buf[10:110]) {
		t.Fatal("READ through the window: data differs")
	}
}

// TestWindowRemoteAccessErrors: a window grants its range and rights only;
// anything else is a Remote Access Error NAK, completed at the requester
// with REM_ACCESS_ERR, and no byte moves.
func TestWindowRemoteAccessErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		wr   func(b *node, rkey uint32) verbs.SendWR
	}{
		{"WRITE past the window's end", func(b *node, rkey uint32) verbs.SendWR {
			return verbs.SendWR{Opcode: verbs.WRRDMAWrite, RemoteAddr: b.va(windowOffset + 4000), RKey: rkey}
		}},
		{"WRITE before the window", func(b *node, rkey uint32) verbs.SendWR {
			return verbs.SendWR{Opcode: verbs.WRRDMAWrite, RemoteAddr: b.va(windowOffset - 8), RKey: rkey}
		}},
		{"READ through a write-only window", func(b *node, rkey uint32) verbs.SendWR {
			return verbs.SendWR{Opcode: verbs.WRRDMARead, RemoteAddr: b.va(windowOffset), RKey: rkey}
		}},
		{"atomic through a write-only window", func(b *node, rkey uint32) verbs.SendWR {
			return verbs.SendWR{Opcode: verbs.WRAtomicFetchAdd, RemoteAddr: b.va(windowOffset), RKey: rkey, CompareAdd: 1}
		}},
		{"the window's previous rkey", func(b *node, rkey uint32) verbs.SendWR {
			return verbs.SendWR{Opcode: verbs.WRRDMAWrite, RemoteAddr: b.va(windowOffset), RKey: rkey&^0xff | (rkey-1)&0xff}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, defaultOpts())
			a, b := h.a, h.b
			mr, w := bindable(t, b, memory.Type2B, memory.LocalWrite|memory.MWBind)
			bind := bindWR(1, mr, w, 4096, memory.RemoteWrite)
			b.post(t, bind)
			h.run()
			wantWC(t, b.scq.take(), verbs.WC{WRID: 1, Opcode: verbs.WCBindMW})
			wr := c.wr(b, bind.Bind.RKey)
			wr.ID = 7
			wr.SGL = []verbs.SGE{a.sge(0, 200)}
			if wr.Opcode == verbs.WRAtomicFetchAdd {
				wr.SGL = []verbs.SGE{a.sge(0, 8)}
			}
			fill(a.buf[:200], 9)
			before := bytes.Clone(b.buf)
			a.post(t, wr)
			h.run()
			wantWC(t, a.scq.take(), verbs.WC{WRID: 7, Status: verbs.WCRemAccessErr})
			if !bytes.Equal(b.buf, before) {
				t.Fatal("a refused access changed the responder's memory")
			}
		})
	}
}

// TestWindowInvalidation: a Type 2B window's rkey dies by LOCAL_INV on
// the QP that bound it and by a peer's SEND with Invalidate naming it;
// either way a WRITE through it afterwards draws a Remote Access Error.
func TestWindowInvalidation(t *testing.T) {
	for _, byPeer := range []bool{false, true} {
		name := map[bool]string{false: "LOCAL_INV", true: "SEND_WITH_INV"}[byPeer]
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, defaultOpts())
			a, b := h.a, h.b
			mr, w := bindable(t, b, memory.Type2B, memory.LocalWrite|memory.MWBind)
			bind := bindWR(1, mr, w, 4096, memory.RemoteWrite)
			b.post(t, bind)
			rkey := bind.Bind.RKey
			if byPeer {
				b.recv(20, 0x9000, 64)
				a.post(t, verbs.SendWR{ID: 2, Opcode: verbs.WRSendWithInv, InvRKey: rkey, SGL: []verbs.SGE{a.sge(0, 16)}})
			} else {
				b.post(t, verbs.SendWR{ID: 2, Opcode: verbs.WRLocalInv, InvRKey: rkey})
			}
			h.run()
			if byPeer {
				wantWC(t, b.scq.take(), verbs.WC{WRID: 1, Opcode: verbs.WCBindMW})
				wantWC(t, a.scq.take(), verbs.WC{WRID: 2, Opcode: verbs.WCSend})
				rc := b.rcq.take()
				wantWC(t, rc, verbs.WC{WRID: 20, Opcode: verbs.WCRecv, ByteLen: 16})
				if rc[0].InvRKey != rkey || rc[0].Flags&verbs.WCFlagWithInv == 0 {
					t.Fatalf("receive completion %+v: want the invalidated rkey %#x", rc[0], rkey)
				}
			} else {
				wantWC(t, b.scq.take(), verbs.WC{WRID: 1, Opcode: verbs.WCBindMW}, verbs.WC{WRID: 2, Opcode: verbs.WCLocalInv})
			}
			if w.Bound() {
				t.Fatal("the window is still bound")
			}
			a.post(t, verbs.SendWR{ID: 3, Opcode: verbs.WRRDMAWrite, SGL: []verbs.SGE{a.sge(0, 8)}, RemoteAddr: b.va(windowOffset), RKey: rkey})
			h.run()
			wantWC(t, a.scq.take(), verbs.WC{WRID: 3, Status: verbs.WCRemAccessErr})
		})
	}
}

// TestWindowType1Rebind: a Type 1 window moves by re-binding (the old rkey
// dies at once), unbinds with a zero length, and cannot be invalidated
// (o10-37.2.26: LOCAL_INV fails).
func TestWindowType1Rebind(t *testing.T) {
	h := newHarness(t, defaultOpts())
	a, b := h.a, h.b
	mr, w := bindable(t, b, memory.Type1, memory.LocalWrite|memory.MWBind)
	first := bindWR(1, mr, w, 64, memory.RemoteRead)
	b.post(t, first)
	h.run()
	second := bindWR(2, mr, w, 64, memory.RemoteRead)
	second.Bind.Addr += 64
	b.post(t, second)
	h.run()
	wantWC(t, b.scq.take(), verbs.WC{WRID: 1, Opcode: verbs.WCBindMW}, verbs.WC{WRID: 2, Opcode: verbs.WCBindMW})
	a.post(t, verbs.SendWR{ID: 3, Opcode: verbs.WRRDMARead, SGL: []verbs.SGE{a.sge(0, 64)}, RemoteAddr: b.va(windowOffset + 64), RKey: second.Bind.RKey})
	h.run()
	wantWC(t, a.scq.take(), verbs.WC{WRID: 3, Opcode: verbs.WCRDMARead, ByteLen: 64})
	a.post(t, verbs.SendWR{ID: 4, Opcode: verbs.WRRDMARead, SGL: []verbs.SGE{a.sge(0, 64)}, RemoteAddr: b.va(windowOffset), RKey: first.Bind.RKey})
	h.run()
	wantWC(t, a.scq.take(), verbs.WC{WRID: 4, Status: verbs.WCRemAccessErr})

	h = newHarness(t, defaultOpts())
	a, b = h.a, h.b
	mr, w = bindable(t, b, memory.Type1, memory.LocalWrite|memory.MWBind)
	bind := bindWR(1, mr, w, 64, memory.RemoteRead)
	b.post(t, bind)
	unbind := verbs.SendWR{ID: 2, Opcode: verbs.WRBindMW, Bind: verbs.MWBind{Window: bind.Bind.RKey, RKey: verbs.IncRKey(bind.Bind.RKey)}}
	b.post(t, unbind)
	a.post(t, verbs.SendWR{ID: 4, Opcode: verbs.WRRDMARead, SGL: []verbs.SGE{a.sge(0, 64)}, RemoteAddr: b.va(windowOffset), RKey: bind.Bind.RKey})
	h.run()
	wantWC(t, a.scq.take(), verbs.WC{WRID: 4, Status: verbs.WCRemAccessErr})
	wantWC(t, b.scq.take(), verbs.WC{WRID: 1, Opcode: verbs.WCBindMW}, verbs.WC{WRID: 2, Opcode: verbs.WCBindMW})

	h = newHarness(t, defaultOpts())
	b = h.b
	mr, w = bindable(t, b, memory.Type1, memory.LocalWrite|memory.MWBind)
	bind = bindWR(1, mr, w, 64, memory.RemoteRead)
	b.post(t, bind)
	b.post(t, verbs.SendWR{ID: 2, Opcode: verbs.WRLocalInv, InvRKey: bind.Bind.RKey})
	h.run()
	wantWC(t, b.scq.take(), verbs.WC{WRID: 1, Opcode: verbs.WCBindMW}, verbs.WC{WRID: 2, Status: verbs.WCLocProtErr})
	if !w.Bound() {
		t.Fatal("LOCAL_INV unbound a type 1 window")
	}
}

// TestWindowBindErrors: each bind rule, broken, completes the BIND_MW with
// MW_BIND_ERR and moves the QP to ERR; the window stays unbound.
func TestWindowBindErrors(t *testing.T) {
	for _, c := range []struct {
		name   string
		typ    memory.WindowType
		mrAcc  memory.Access
		change func(wr *verbs.SendWR, mr *memory.Region)
	}{
		{"C10-73 MR without MW_BIND", memory.Type2B, memory.LocalWrite | memory.RemoteRead, nil},
		{"C10-74 writable window, MR without LOCAL_WRITE", memory.Type2B, memory.MWBind, nil},
		{"C10-75 range past the MR", memory.Type2B, memory.LocalWrite | memory.MWBind, func(wr *verbs.SendWR, _ *memory.Region) {
			wr.Bind.Length = bufSize
		}},
		{"o10-36.2.2 zero-based type 1", memory.Type1, memory.LocalWrite | memory.MWBind, func(wr *verbs.SendWR, _ *memory.Region) {
			wr.Bind.Access |= memory.ZeroBased
		}},
		{"o10-37.2.40 type 2B with zero length", memory.Type2B, memory.LocalWrite | memory.MWBind, func(wr *verbs.SendWR, _ *memory.Region) {
			wr.Bind.Length = 0
		}},
		{"MW_BIND in the window's rights", memory.Type2B, memory.LocalWrite | memory.MWBind, func(wr *verbs.SendWR, _ *memory.Region) {
			wr.Bind.Access |= memory.MWBind
		}},
		{"no such MR", memory.Type2B, memory.LocalWrite | memory.MWBind, func(wr *verbs.SendWR, mr *memory.Region) {
			wr.Bind.MR = mr.LKey() ^ 0x80
		}},
		{"stale window rkey", memory.Type2B, memory.LocalWrite | memory.MWBind, func(wr *verbs.SendWR, _ *memory.Region) {
			wr.Bind.Window = verbs.IncRKey(wr.Bind.Window)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, defaultOpts())
			b := h.b
			mr, w := bindable(t, b, c.typ, c.mrAcc)
			wr := bindWR(1, mr, w, 64, memory.RemoteWrite)
			if c.change != nil {
				c.change(&wr, mr)
			}
			b.post(t, wr)
			h.run()
			wantWC(t, b.scq.take(), verbs.WC{WRID: 1, Status: verbs.WCMWBindErr})
			if w.Bound() || b.qp.State() != verbs.QPSErr {
				t.Fatalf("after a failed bind: window bound %v, QP %v", w.Bound(), b.qp.State())
			}
		})
	}
}

// TestWindowType2BBoundTwice: o10-37.2.30, a bound Type 2B window must be
// invalidated before it is bound again.
func TestWindowType2BBoundTwice(t *testing.T) {
	h := newHarness(t, defaultOpts())
	b := h.b
	mr, w := bindable(t, b, memory.Type2B, memory.LocalWrite|memory.MWBind)
	first := bindWR(1, mr, w, 64, memory.RemoteRead)
	b.post(t, first)
	h.run()
	again := verbs.SendWR{ID: 2, Opcode: verbs.WRBindMW, Bind: first.Bind}
	again.Bind.Window, again.Bind.RKey = first.Bind.RKey, verbs.IncRKey(first.Bind.RKey)
	b.post(t, again)
	h.run()
	wantWC(t, b.scq.take(), verbs.WC{WRID: 1, Opcode: verbs.WCBindMW}, verbs.WC{WRID: 2, Status: verbs.WCMWBindErr})
	if w.RKey() != first.Bind.RKey || !w.Bound() {
		t.Fatalf("the failed bind changed the window: rkey %#x bound %v", w.RKey(), w.Bound())
	}
}
