// Error semantics: a bad local key, a bad or out-of-bounds remote access and
// a receive too small each complete in error with the status the IBTA
// gives them, the QP goes to ERR, and what follows is flushed.

package ibvtest

import (
	"testing"
	"time"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
)

// badKey turns a valid key into one no region has: every bit of the index
// part Linux drivers use (bits 8..23) flips.
func badKey(k uint32) uint32 { return k ^ 0x00FFFF00 }

// waitState waits (boundedly: a state change has no event of its own) for
// qp to reach want.
func waitState(t *testing.T, qp ibv.QP, want verbs.QPState) {
	t.Helper()
	for deadline := time.Now().Add(waitTimeout); qp.State() != want; {
		if time.Now().After(deadline) {
			t.Fatalf("QP %#x in %v, want %v", qp.QPN(), qp.State(), want)
		}
		time.Sleep(time.Millisecond)
	}
}

// testBadLKey: a SEND gathering through a bad lkey completes with
// LOC_PROT_ERR, the QP goes to ERR, and the WR behind it, a WR posted
// afterwards and a receive posted afterwards are flushed.
func testBadLKey(t *testing.T, p Pair) {
	c := newRC(t, p, verbs.QPCap{})
	a, b := c.a, c.b
	b.postRecv(c.qb, 1, dstOff, 4096)
	b.postRecv(c.qb, 2, dstOff+4096, 4096)
	bad := a.sge(srcOff, 64)
	bad.LKey = badKey(bad.LKey)
	err := c.qa.PostSend(
		&verbs.SendWR{ID: 10, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGL: []verbs.SGE{bad}},
		&verbs.SendWR{ID: 11, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGL: []verbs.SGE{a.sge(srcOff, 64)}})
	if err != nil {
		t.Fatalf("PostSend with a bad lkey: %v (verbs report it in the completion)", err)
	}
	wcs := waitWC(t, a.scq, 2)
	checkWC(t, "send with a bad lkey", wcs[0], 10, verbs.WCLocProtErr, 0)
	checkWC(t, "send behind it", wcs[1], 11, verbs.WCWRFlushErr, 0)
	waitState(t, c.qa, verbs.QPSErr)
	a.postSend(c.qa, &verbs.SendWR{ID: 12, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGL: []verbs.SGE{a.sge(srcOff, 64)}})
	checkWC(t, "send posted in ERR", waitOne(t, a.scq), 12, verbs.WCWRFlushErr, 0)
	a.postRecv(c.qa, 13, dstOff, 64)
	checkWC(t, "receive posted in ERR", waitOne(t, a.rcq), 13, verbs.WCWRFlushErr, 0)
	noWC(t, "the peer of a QP that sent nothing", b.rcq)
}

// testBadRKey: an RDMA WRITE with a bad rkey, and one past the end of the
// region, complete with REM_ACCESS_ERR at the requester, whose QP goes to
// ERR; the responder's memory is untouched.
func testBadRKey(t *testing.T, p Pair) {
	a, b := newSides(t, p)
	for _, tc := range []struct {
		name string
		va   uint64
		rkey uint32
	}{
		{"bad rkey", b.va(dstOff), badKey(b.mr.RKey())},
		{"past the region's end", b.va(bufSize - 100), b.mr.RKey()},
	} {
		c := connectRC(t, a, a.qp(verbs.QPTypeRC, verbs.QPCap{}, nil), b, b.qp(verbs.QPTypeRC, verbs.QPCap{}, nil))
		fill(a.mem[srcOff:srcOff+256], 5)
		memset(b.mem[dstOff:dstOff+256], untouch)
		memset(b.mem[bufSize-100:], untouch)
		c.ready(t)
		a.postSend(c.qa, &verbs.SendWR{ID: 20, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
			SGL: []verbs.SGE{a.sge(srcOff, 256)}, RemoteAddr: tc.va, RKey: tc.rkey})
		checkWC(t, "write, "+tc.name, waitOne(t, a.scq), 20, verbs.WCRemAccessErr, 0)
		waitState(t, c.qa, verbs.QPSErr)
		checkFilled(t, "memory of a refused write", b.mem[dstOff:dstOff+256], untouch)
		checkFilled(t, "memory of a refused write", b.mem[bufSize-100:], untouch)
	}
}

// testRecvTooSmall: a SEND longer than the receive WR completes that WR
// with LOC_LEN_ERR and moves the responder's QP to ERR; the requester gets
// the NAK's REM_INV_REQ_ERR.
func testRecvTooSmall(t *testing.T, p Pair) {
	c := newRC(t, p, verbs.QPCap{})
	a, b := c.a, c.b
	b.postRecv(c.qb, 30, dstOff, 16)
	a.postSend(c.qa, &verbs.SendWR{ID: 31, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGL: []verbs.SGE{a.sge(srcOff, 100)}})
	checkWC(t, "receive too small", waitOne(t, b.rcq), 30, verbs.WCLocLenErr, 0)
	checkWC(t, "send into it", waitOne(t, a.scq), 31, verbs.WCRemInvReqErr, 0)
	waitState(t, c.qb, verbs.QPSErr)
}
