// Memory windows: B binds a window over part of its buffer and A reaches
// that part, and only that part, through the window's rkey; a Type 1
// window is bound with BindMW and unbound by a zero-length bind, a Type 2B
// window by a BIND_MW WR and freed by LOCAL_INV, by A's SEND with
// Invalidate and by deallocation; after each, A's READ through the rkey
// completes with REM_ACCESS_ERR. A device whose max_mw is 0 skips these
// (siw), and so does a backend that implements no window verbs.

package ibvtest

import (
	"strings"
	"testing"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
)

// Where B's windows lie and how long they are.
const (
	mwOff = srcOff + 4096
	mwLen = 8192
)

// mwRig is an RC pair whose B side has an MR with MW_BIND over its buffer.
type mwRig struct {
	*rc
	alloc ibv.MWAllocator
	mr    ibv.MR // B's MR to bind windows to
}

// newMWRig connects an RC pair, or skips when B's device has no windows of
// type typ.
func newMWRig(t *testing.T, p Pair, typ memory.WindowType) *mwRig {
	t.Helper()
	c := newRC(t, p, verbs.QPCap{})
	alloc, ok := c.b.dev.(ibv.MWAllocator)
	want := verbs.DeviceMemWindow
	if typ == memory.Type2B {
		want = verbs.DeviceMemWindowType2B
	}
	if c.b.attr.MaxMW == 0 || c.b.attr.DeviceCapFlags&want == 0 {
		t.Skipf("%s: no %v memory windows (max_mw %d, flags %#x)", c.b.dev.Name(), typ, c.b.attr.MaxMW, uint32(c.b.attr.DeviceCapFlags))
	}
	if !ok {
		// The device has windows, but this backend offers no verbs for
		// them.
		t.Skipf("%s: max_mw %d, but the backend implements no ibv.MWAllocator", c.b.dev.Name(), c.b.attr.MaxMW)
	}
	mr, err := c.b.dev.RegMR(c.b.pd, c.b.mem, memory.LocalWrite|memory.MWBind)
	if err != nil {
		t.Fatalf("RegMR with MW_BIND: %v", err)
	}
	cleanup(t, "DeregMR (MW_BIND)", mr.Dereg)
	return &mwRig{rc: c, alloc: alloc, mr: mr}
}

// window allocates a window of typ on B, deallocated at the end unless the
// test does it.
func (r *mwRig) window(t *testing.T, typ memory.WindowType) ibv.MW {
	t.Helper()
	mw, err := r.alloc.AllocMW(r.b.pd, typ)
	if err != nil {
		t.Fatalf("AllocMW(%v): %v", typ, err)
	}
	t.Cleanup(func() { _ = mw.Dealloc() }) // the test may have deallocated it
	return mw
}

// bind2B binds a Type 2B window with a BIND_MW WR and returns its rkey.
func (r *mwRig) bind2B(t *testing.T, mw ibv.MW, access memory.Access) uint32 {
	t.Helper()
	wr := &verbs.SendWR{ID: 30, Opcode: verbs.WRBindMW, Flags: verbs.SendSignaled, Bind: verbs.MWBind{
		Window: mw.RKey(), MR: r.mr.LKey(), Addr: r.b.va(mwOff), Length: mwLen, Access: access,
		RKey: verbs.IncRKey(mw.RKey()),
	}}
	r.b.postSend(r.qb, wr)
	checkWC(t, "BIND_MW", waitOne(t, r.b.scq), 30, verbs.WCSuccess, verbs.WCBindMW)
	return wr.Bind.RKey
}

// readThrough READs n bytes at B's offset off through rkey into A's
// dstOff and returns the completion.
func (r *mwRig) readThrough(t *testing.T, rkey uint32, off, n int) verbs.WC {
	t.Helper()
	r.a.postSend(r.qa, &verbs.SendWR{ID: 40, Opcode: verbs.WRRDMARead, Flags: verbs.SendSignaled,
		SGL: []verbs.SGE{r.a.sge(dstOff, n)}, RemoteAddr: r.b.va(off), RKey: rkey})
	return waitOne(t, r.a.scq)
}

// writeReadThrough WRITEs a pattern through rkey into the window and READs
// it back, checking B's memory.
func (r *mwRig) writeReadThrough(t *testing.T, rkey uint32) {
	t.Helper()
	fill(r.a.mem[srcOff:srcOff+mwLen], 11)
	r.ready(t)
	r.a.postSend(r.qa, &verbs.SendWR{ID: 41, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
		SGL: []verbs.SGE{r.a.sge(srcOff, mwLen)}, RemoteAddr: r.b.va(mwOff), RKey: rkey})
	checkWC(t, "WRITE through the window", waitOne(t, r.a.scq), 41, verbs.WCSuccess, verbs.WCRDMAWrite)
	checkWC(t, "READ through the window", r.readThrough(t, rkey, mwOff+100, 500), 40, verbs.WCSuccess, verbs.WCRDMARead)
	r.done(t)
	checkBytes(t, "window memory", r.b.mem[mwOff:mwOff+mwLen], r.a.mem[srcOff:srcOff+mwLen])
	checkBytes(t, "READ through the window", r.a.mem[dstOff:dstOff+500], r.a.mem[srcOff+100:srcOff+600])
}

// wantRemAccessErr READs through rkey and expects REM_ACCESS_ERR.
func (r *mwRig) wantRemAccessErr(t *testing.T, what string, rkey uint32, off int) {
	t.Helper()
	checkWC(t, what, r.readThrough(t, rkey, off, 64), 40, verbs.WCRemAccessErr, 0)
}

func testMWType1(t *testing.T, p Pair) {
	r := newMWRig(t, p, memory.Type1)
	mw := r.window(t, memory.Type1)
	binder, ok := r.qb.(ibv.MWBinder)
	if !ok {
		t.Skipf("%s: QPs have no BindMW", r.b.dev.Name())
	}
	rkey, err := binder.BindMW(mw, ibv.MWBindInfo{ID: 31, Flags: verbs.SendSignaled, MR: r.mr,
		Addr: r.b.va(mwOff), Length: mwLen, Access: memory.RemoteRead | memory.RemoteWrite})
	if err != nil {
		t.Fatalf("BindMW: %v", err)
	}
	if mw.RKey() != rkey {
		t.Fatalf("the window's rkey %#x after BindMW, BindMW returned %#x", mw.RKey(), rkey)
	}
	checkWC(t, "BindMW", waitOne(t, r.b.scq), 31, verbs.WCSuccess, verbs.WCBindMW)
	r.writeReadThrough(t, rkey)
	// A zero-length bind unbinds: the rkey dies.
	if _, err := binder.BindMW(mw, ibv.MWBindInfo{ID: 32, Flags: verbs.SendSignaled, MR: r.mr}); err != nil {
		t.Fatalf("BindMW (unbind): %v", err)
	}
	checkWC(t, "BindMW (unbind)", waitOne(t, r.b.scq), 32, verbs.WCSuccess, verbs.WCBindMW)
	r.wantRemAccessErr(t, "READ through an unbound type 1 window", rkey, mwOff)
}

func testMWType2B(t *testing.T, p Pair) {
	r := newMWRig(t, p, memory.Type2B)
	mw := r.window(t, memory.Type2B)
	rkey := r.bind2B(t, mw, memory.RemoteRead|memory.RemoteWrite)
	r.writeReadThrough(t, rkey)
	wc := r.readThrough(t, rkey, mwOff+mwLen-32, 64)
	if wc.WRID == 40 && wc.Status == verbs.WCSuccess && isRxe(r.b) {
		// Linux rxe checks an access through a window against the
		// window's MR, not the window (rxe_resp.c check_rkey:
		// mr_check_range of mw->mr), so a READ that leaves the window
		// but stays inside the MR succeeds there.
		t.Logf("%s: READ past the window succeeded inside the MR (rxe checks the MR's range, not the window's)", r.b.dev.Name())
		return
	}
	checkWC(t, "READ past the window", wc, 40, verbs.WCRemAccessErr, 0)
}

// isRxe tells Linux rxe (through nic/passthrough) from the rest: its
// vendor id (RXE_VENDOR_ID, which rnic's own devices report too) and the
// name rdma link gives it by convention (rxe0).
func isRxe(s *side) bool {
	return s.attr.VendorID == 0xFFFFFF && strings.HasPrefix(s.dev.Name(), "rxe")
}

func testMWType2BLocalInv(t *testing.T, p Pair) {
	r := newMWRig(t, p, memory.Type2B)
	mw := r.window(t, memory.Type2B)
	rkey := r.bind2B(t, mw, memory.RemoteRead)
	checkWC(t, "READ through the window", r.readThrough(t, rkey, mwOff, 64), 40, verbs.WCSuccess, verbs.WCRDMARead)
	r.b.postSend(r.qb, &verbs.SendWR{ID: 33, Opcode: verbs.WRLocalInv, Flags: verbs.SendSignaled, InvRKey: rkey})
	checkWC(t, "LOCAL_INV", waitOne(t, r.b.scq), 33, verbs.WCSuccess, verbs.WCLocalInv)
	r.wantRemAccessErr(t, "READ after LOCAL_INV", rkey, mwOff)
}

func testMWType2BSendInv(t *testing.T, p Pair) {
	r := newMWRig(t, p, memory.Type2B)
	mw := r.window(t, memory.Type2B)
	rkey := r.bind2B(t, mw, memory.RemoteRead)
	r.b.postRecv(r.qb, 34, dstOff, 64)
	r.a.postSend(r.qa, &verbs.SendWR{ID: 35, Opcode: verbs.WRSendWithInv, Flags: verbs.SendSignaled, InvRKey: rkey,
		SGL: []verbs.SGE{r.a.sge(srcOff, 16)}})
	checkWC(t, "SEND_WITH_INV", waitOne(t, r.a.scq), 35, verbs.WCSuccess, verbs.WCSend)
	wc := waitOne(t, r.b.rcq)
	checkWC(t, "receive of SEND_WITH_INV", wc, 34, verbs.WCSuccess, verbs.WCRecv)
	if wc.Flags&verbs.WCFlagWithInv == 0 || wc.InvRKey != rkey {
		t.Fatalf("receive of SEND_WITH_INV: flags %v, invalidated rkey %#x, want WITH_INV and %#x", wc.Flags, wc.InvRKey, rkey)
	}
	r.wantRemAccessErr(t, "READ after SEND_WITH_INV", rkey, mwOff)
}

func testMWDeallocBound(t *testing.T, p Pair) {
	r := newMWRig(t, p, memory.Type2B)
	mw := r.window(t, memory.Type2B)
	rkey := r.bind2B(t, mw, memory.RemoteRead)
	if err := mw.Dealloc(); err != nil {
		t.Fatalf("Dealloc of a bound type 2B window: %v (rxe allows it)", err)
	}
	r.wantRemAccessErr(t, "READ through a deallocated window", rkey, mwOff)
}

// testMWBindErr: a bind to an MR without MW_BIND (C10-73) completes with
// MW_BIND_ERR.
func testMWBindErr(t *testing.T, p Pair) {
	r := newMWRig(t, p, memory.Type2B)
	mw := r.window(t, memory.Type2B)
	r.b.postSend(r.qb, &verbs.SendWR{ID: 36, Opcode: verbs.WRBindMW, Flags: verbs.SendSignaled, Bind: verbs.MWBind{
		Window: mw.RKey(), MR: r.b.mr.LKey(), Addr: r.b.va(mwOff), Length: mwLen, Access: memory.RemoteRead,
		RKey: verbs.IncRKey(mw.RKey()),
	}})
	checkWC(t, "BIND_MW to an MR without MW_BIND", waitOne(t, r.b.scq), 36, verbs.WCMWBindErr, 0)
}
