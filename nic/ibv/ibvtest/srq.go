// A shared receive queue feeding two RC QPs: every message lands in one of
// the SRQ's WRs, whichever QP it came on, each WR used once.

package ibvtest

import (
	"fmt"
	"testing"

	"github.com/rnic/rnic/nic/verbs"
)

func testSRQ(t *testing.T, p Pair) {
	a, b := newSides(t, p)
	if b.attr.MaxSRQ == 0 || b.attr.MaxSRQWR < 8 {
		t.Skipf("max_srq %d, max_srq_wr %d", b.attr.MaxSRQ, b.attr.MaxSRQWR)
	}
	srq, err := b.dev.CreateSRQ(b.pd, 8, 1)
	if err != nil {
		t.Fatalf("CreateSRQ: %v", err)
	}
	cleanup(t, "destroy SRQ", srq.Destroy)
	c1 := connectRC(t, a, a.qp(verbs.QPTypeRC, verbs.QPCap{}, nil), b, b.qp(verbs.QPTypeRC, verbs.QPCap{}, srq))
	c2 := connectRC(t, a, a.qp(verbs.QPTypeRC, verbs.QPCap{}, nil), b, b.qp(verbs.QPTypeRC, verbs.QPCap{}, srq))
	if err := c1.qb.PostRecv(&verbs.RecvWR{ID: 1, SGL: []verbs.SGE{b.sge(dstOff, 64)}}); err == nil {
		t.Error("PostRecv on a QP that receives from an SRQ succeeded")
	}

	const slot = 1024
	memset(b.mem[dstOff:], untouch)
	for i := range 4 {
		if err := srq.PostRecv(&verbs.RecvWR{ID: uint64(100 + i), SGL: []verbs.SGE{b.sge(dstOff+i*slot, slot)}}); err != nil {
			t.Fatalf("SRQ PostRecv: %v", err)
		}
	}
	// Four messages of distinct lengths, alternating between the QPs.
	type msg struct {
		c    *rc
		data []byte
	}
	msgs := make(map[int]msg) // by length
	for i := range 4 {
		c, n := c1, 100*(i+1)
		if i%2 == 1 {
			c = c2
		}
		off := srcOff + i*slot
		fill(a.mem[off:off+n], i)
		msgs[n] = msg{c, a.mem[off : off+n]}
		a.postSend(c.qa, &verbs.SendWR{ID: uint64(i), Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGL: []verbs.SGE{a.sge(off, n)}})
	}
	used := make(map[uint64]bool)
	for _, wc := range waitWC(t, b.rcq, 4) {
		checkWC(t, "SRQ receive", wc, wc.WRID, verbs.WCSuccess, verbs.WCRecv)
		m, ok := msgs[int(wc.ByteLen)]
		if wc.WRID < 100 || wc.WRID >= 104 || used[wc.WRID] || !ok {
			t.Fatalf("completion %+v: a WR used twice, unknown, or a length never sent", wc)
		}
		used[wc.WRID] = true
		delete(msgs, int(wc.ByteLen))
		if wc.QPN != m.c.qb.QPN() {
			t.Errorf("%d-byte message completed on QP %#x, sent to %#x", wc.ByteLen, wc.QPN, m.c.qb.QPN())
		}
		off := dstOff + int(wc.WRID-100)*slot
		checkBytes(t, fmt.Sprintf("message in SRQ WR %d", wc.WRID), b.mem[off:off+len(m.data)], m.data)
	}
	for range 4 {
		if wc := waitOne(t, a.scq); wc.Status != verbs.WCSuccess {
			t.Fatalf("send: %+v", wc)
		}
	}
}
