// Memory windows on the iWARP engine: a window's STag is an STag like an
// MR's (RFC 5040: a Tagged Buffer is named by its STag, whatever
// registered it), bound by a BIND_MW the send queue executes in order and
// invalidated by LOCAL_INV or by a Send with Invalidate naming it; a
// request through a dead or too narrow window draws a Terminate (for a
// Read Request an RDMAP remote protection error, invalid
// STag or base/bounds) and REM_ACCESS_ERR at the requester.

package iwarp

import (
	"bytes"
	"testing"

	"github.com/rnic/rnic/iwarp/wire"
	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/transport"
)

const windowOffset = 0x4000

// windowOn registers n's buffer again with mrAccess and binds a window of
// typ to [windowOffset, +length) of it with access through n's QP,
// returning the bind WR (its Bind.RKey is the window's STag).
func windowOn(t *testing.T, h *harness, n *node, typ memory.WindowType, mrAccess, access memory.Access, length uint64) (verbs.SendWR, *memory.Window) {
	t.Helper()
	mr, err := n.mem.Register(1, n.buf, 0x10000, mrAccess)
	if err != nil {
		t.Fatal(err)
	}
	w, err := n.mem.AllocWindow(1, typ)
	if err != nil {
		t.Fatal(err)
	}
	wr := verbs.SendWR{ID: 1, Opcode: verbs.WRBindMW, Bind: verbs.MWBind{
		Window: w.RKey(), MR: mr.LKey(), Addr: n.va(windowOffset), Length: length, Access: access,
		RKey: verbs.IncRKey(w.RKey()),
	}}
	n.post(t, wr)
	h.run()
	return wr, w
}

func connected(t *testing.T) *harness {
	t.Helper()
	h := newHarness(t, defaultOpts())
	if h.result == nil || h.result.Err != nil {
		t.Fatalf("connect: %+v", h.result)
	}
	return h
}

func TestWindowWriteRead(t *testing.T) {
	for _, typ := range []memory.WindowType{memory.Type1, memory.Type2B} {
		t.Run(typ.String(), func(t *testing.T) {
			h := connected(t)
			a, b := h.a, h.b
			bind, _ := windowOn(t, h, b, typ, memory.LocalWrite|memory.MWBind, memory.RemoteWrite|memory.RemoteRead, 4096)
			wantWC(t, b.scq.take(), verbs.WC{WRID: 1, Opcode: verbs.WCBindMW})
			stag := bind.Bind.RKey
			fill(a.buf[:4096], 5)
			a.post(t, verbs.SendWR{ID: 2, Opcode: verbs.WRRDMAWrite, SGL: []verbs.SGE{a.sge(0, 4096)}, RemoteAddr: b.va(windowOffset), RKey: stag})
			a.post(t, verbs.SendWR{ID: 3, Opcode: verbs.WRRDMARead, SGL: []verbs.SGE{a.sge(0x8000, 64)}, RemoteAddr: b.va(windowOffset + 100), RKey: stag})
			h.run()
			wantWC(t, a.scq.take(), verbs.WC{WRID: 2, Opcode: verbs.WCRDMAWrite}, verbs.WC{WRID: 3, Opcode: verbs.WCRDMARead, ByteLen: 64})
			if !bytes.Equal(b.buf[windowOffset:windowOffset+4096], a.buf[:4096]) || !bytes.Equal(a.buf[0x8000:0x8000+64], a.buf[100:164]) {
				t.Fatal("data through the window differs")
			}
		})
	}
}

// TestWindowTerminates: a READ through a window past its bounds, through
// its STag after LOCAL_INV, and after a Send with Invalidate named it: each
// is a Terminate from B and REM_ACCESS_ERR at A.
func TestWindowTerminates(t *testing.T) {
	for _, c := range []struct {
		name   string
		before func(t *testing.T, h *harness, stag uint32)
		off    int
		code   wire.TermCode
	}{
		{"past the window", nil, 4000, wire.TermRDMAPBaseBounds},
		{"after LOCAL_INV", func(t *testing.T, h *harness, stag uint32) {
			h.b.post(t, verbs.SendWR{ID: 5, Opcode: verbs.WRLocalInv, InvRKey: stag})
			h.run()
			wantWC(t, h.b.scq.take(), verbs.WC{WRID: 5, Opcode: verbs.WCLocalInv})
		}, 0, wire.TermRDMAPInvalidSTag},
		{"after Send with Invalidate", func(t *testing.T, h *harness, stag uint32) {
			h.b.recv(9, 0x9000, 64)
			h.a.post(t, verbs.SendWR{ID: 5, Opcode: verbs.WRSendWithInv, InvRKey: stag, SGL: []verbs.SGE{h.a.sge(0, 8)}})
			h.run()
			wantWC(t, h.a.scq.take(), verbs.WC{WRID: 5, Opcode: verbs.WCSend})
			rc := h.b.rcq.take()
			wantWC(t, rc, verbs.WC{WRID: 9, Opcode: verbs.WCRecv, ByteLen: 8})
			if rc[0].InvRKey != stag || rc[0].Flags&verbs.WCFlagWithInv == 0 {
				t.Fatalf("receive completion %+v, want the invalidated STag %#x", rc[0], stag)
			}
		}, 0, wire.TermRDMAPInvalidSTag},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := connected(t)
			a, b := h.a, h.b
			bind, w := windowOn(t, h, b, memory.Type2B, memory.LocalWrite|memory.MWBind, memory.RemoteRead, 4096)
			wantWC(t, b.scq.take(), verbs.WC{WRID: 1, Opcode: verbs.WCBindMW})
			if c.before != nil {
				c.before(t, h, bind.Bind.RKey)
				if w.Bound() {
					t.Fatal("the window is still bound")
				}
			}
			a.post(t, verbs.SendWR{ID: 7, Opcode: verbs.WRRDMARead, SGL: []verbs.SGE{a.sge(0, 200)}, RemoteAddr: b.va(windowOffset + c.off), RKey: bind.Bind.RKey})
			h.run()
			wantWC(t, a.scq.take(), verbs.WC{WRID: 7, Status: verbs.WCRemAccessErr})
			tb := h.terminateOn(transport.BtoA, b.qp.txFraming)
			if tb == nil || tb.Code() != c.code {
				t.Fatalf("B's Terminate %v, want %v", tb, c.code)
			}
		})
	}
}

// TestWindowBindError: a bind on an MR without MW_BIND (C10-73) completes
// with MW_BIND_ERR and leaves the window unbound.
func TestWindowBindError(t *testing.T) {
	h := connected(t)
	_, w := windowOn(t, h, h.b, memory.Type2B, memory.LocalWrite|memory.RemoteRead, memory.RemoteRead, 64)
	wantWC(t, h.b.scq.take(), verbs.WC{WRID: 1, Status: verbs.WCMWBindErr})
	if w.Bound() {
		t.Fatal("a failed bind bound the window")
	}
}
