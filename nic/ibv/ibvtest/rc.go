// RC data movement: SEND (with immediate, several SGEs, inline), RDMA
// WRITE (with immediate) and READ, messages of several packets, and a full
// queue of WRs in flight.

package ibvtest

import (
	"fmt"
	"testing"

	"github.com/rnic/rnic/nic/verbs"
)

// Offsets in each side's buffer: what a side sends from lies in the first
// half, what it receives into in the second.
const (
	srcOff  = 0
	dstOff  = bufSize / 2
	untouch = 0xEE // the value of receive memory nothing may write
)

// sendOne SENDs n bytes of pattern seed from a to b (opcode op, imm) and
// checks both completions and the bytes, and that nothing past the message
// was written.
func sendOne(t *testing.T, c *rc, op verbs.WROpcode, n, seed int, imm uint32) {
	t.Helper()
	a, b := c.a, c.b
	fill(a.mem[srcOff:srcOff+n], seed)
	memset(b.mem[dstOff:dstOff+n+64], untouch)
	b.postRecv(c.qb, 7, dstOff, n+64)
	a.postSend(c.qa, &verbs.SendWR{ID: 8, Opcode: op, Flags: verbs.SendSignaled, Imm: imm, SGL: []verbs.SGE{a.sge(srcOff, n)}})
	wc := waitOne(t, b.rcq)
	checkWC(t, "receive", wc, 7, verbs.WCSuccess, verbs.WCRecv)
	if wc.ByteLen != uint32(n) || wc.QPN != c.qb.QPN() {
		t.Fatalf("receive: byte_len %d, qp_num %#x; want %d, %#x", wc.ByteLen, wc.QPN, n, c.qb.QPN())
	}
	if op == verbs.WRSendWithImm {
		if wc.Flags&verbs.WCFlagWithImm == 0 || wc.Imm != imm {
			t.Fatalf("receive: flags %#x imm %#x, want WITH_IMM and %#x", wc.Flags, wc.Imm, imm)
		}
	} else if wc.Flags&verbs.WCFlagWithImm != 0 {
		t.Fatalf("receive: WITH_IMM set for a SEND without immediate")
	}
	checkWC(t, "send", waitOne(t, a.scq), 8, verbs.WCSuccess, verbs.WCSend)
	checkBytes(t, "received message", b.mem[dstOff:dstOff+n], a.mem[srcOff:srcOff+n])
	checkFilled(t, "receive buffer past the message", b.mem[dstOff+n:dstOff+n+64], untouch)
}

func testSend(t *testing.T, p Pair) {
	c := newRC(t, p, verbs.QPCap{})
	for i, n := range []int{1, 100, 1000} {
		sendOne(t, c, verbs.WRSend, n, i, 0)
	}
	// And back, B to A.
	sendOne(t, &rc{a: c.b, b: c.a, qa: c.qb, qb: c.qa}, verbs.WRSend, 333, 9, 0)
}

func testSendImm(t *testing.T, p Pair) {
	c := newRC(t, p, verbs.QPCap{})
	sendOne(t, c, verbs.WRSendWithImm, 200, 1, 0x12345678)
	sendOne(t, c, verbs.WRSendWithImm, 0, 2, 0xCAFEF00D)
}

// testSendMultiSGE gathers a message from three SGEs and scatters it into
// three others of different lengths.
func testSendMultiSGE(t *testing.T, p Pair) {
	a, b := newSides(t, p)
	n := min(3, a.attr.MaxSGE, b.attr.MaxSGE)
	if n < 3 {
		t.Skipf("max_sge %d and %d: need 3", a.attr.MaxSGE, b.attr.MaxSGE)
	}
	cp := verbs.QPCap{MaxSendSGE: 3, MaxRecvSGE: 3}
	c := connectRC(t, a, a.qp(verbs.QPTypeRC, cp, nil), b, b.qp(verbs.QPTypeRC, cp, nil))
	send := []verbs.SGE{a.sge(5000, 100), a.sge(100, 1), a.sge(9000, 333)}
	recv := []verbs.SGE{b.sge(dstOff+7000, 200), b.sge(dstOff+100, 50), b.sge(dstOff+20000, 1000)}
	var msg []byte
	for i, s := range send {
		off := int(s.Addr - a.mr.Addr())
		fill(a.mem[off:off+int(s.Length)], 10+i)
		msg = append(msg, a.mem[off:off+int(s.Length)]...)
	}
	memset(b.mem[dstOff:], untouch)
	if err := c.qb.PostRecv(&verbs.RecvWR{ID: 1, SGL: recv}); err != nil {
		t.Fatal(err)
	}
	a.postSend(c.qa, &verbs.SendWR{ID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGL: send})
	wc := waitOne(t, b.rcq)
	checkWC(t, "receive", wc, 1, verbs.WCSuccess, verbs.WCRecv)
	if wc.ByteLen != uint32(len(msg)) {
		t.Fatalf("receive: byte_len %d, want %d", wc.ByteLen, len(msg))
	}
	checkWC(t, "send", waitOne(t, a.scq), 2, verbs.WCSuccess, verbs.WCSend)
	rest := msg
	for i, r := range recv {
		off := int(r.Addr - b.mr.Addr())
		k := min(len(rest), int(r.Length))
		checkBytes(t, fmt.Sprintf("receive SGE %d", i), b.mem[off:off+k], rest[:k])
		checkFilled(t, fmt.Sprintf("receive SGE %d past the message", i), b.mem[off+k:off+int(r.Length)], untouch)
		rest = rest[k:]
	}
}

// testSendInline: an inline SEND's data is taken at post time, so the
// buffer may change as soon as PostSend returns.
func testSendInline(t *testing.T, p Pair) {
	a, b := newSides(t, p)
	n := min(a.attr.MaxInlineData, 128)
	if n < 16 {
		t.Skipf("max_inline_data %d", a.attr.MaxInlineData)
	}
	// Two SGEs when the device has them: inline data is gathered too.
	sgl := []verbs.SGE{a.sge(srcOff, n/2), a.sge(srcOff+n/2, n-n/2)}
	if a.attr.MaxSGE < 2 {
		sgl = []verbs.SGE{a.sge(srcOff, n)}
	}
	cp := verbs.QPCap{MaxInlineData: uint32(n), MaxSendSGE: uint32(len(sgl))}
	c := connectRC(t, a, a.qp(verbs.QPTypeRC, cp, nil), b, b.qp(verbs.QPTypeRC, verbs.QPCap{}, nil))
	want := pattern(n, 3)
	copy(a.mem[srcOff:], want)
	b.postRecv(c.qb, 1, dstOff, n)
	a.postSend(c.qa, &verbs.SendWR{ID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled | verbs.SendInline, SGL: sgl})
	memset(a.mem[srcOff:srcOff+n], 0) // the WR owns nothing any more
	wc := waitOne(t, b.rcq)
	checkWC(t, "receive", wc, 1, verbs.WCSuccess, verbs.WCRecv)
	checkWC(t, "inline send", waitOne(t, a.scq), 2, verbs.WCSuccess, verbs.WCSend)
	if wc.ByteLen != uint32(n) {
		t.Fatalf("receive: byte_len %d, want %d", wc.ByteLen, n)
	}
	checkBytes(t, "inline message", b.mem[dstOff:dstOff+n], want)
}

// writeOne WRITEs n bytes of pattern seed from a's srcOff to b's dstOff.
func writeOne(t *testing.T, c *rc, n, seed int) {
	t.Helper()
	a, b := c.a, c.b
	fill(a.mem[srcOff:srcOff+n], seed)
	memset(b.mem[dstOff:dstOff+n+64], untouch)
	c.ready(t)
	a.postSend(c.qa, &verbs.SendWR{ID: 3, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
		SGL: []verbs.SGE{a.sge(srcOff, n)}, RemoteAddr: b.va(dstOff), RKey: b.mr.RKey()})
	checkWC(t, "write", waitOne(t, a.scq), 3, verbs.WCSuccess, verbs.WCRDMAWrite)
	c.done(t)
	checkBytes(t, "written data", b.mem[dstOff:dstOff+n], a.mem[srcOff:srcOff+n])
	checkFilled(t, "memory past the write", b.mem[dstOff+n:dstOff+n+64], untouch)
}

// sendBehind SENDs 10 bytes from A behind what A posted before, and checks
// that they land in B's receive WR id, already posted.
func sendBehind(t *testing.T, c *rc, id uint64) {
	t.Helper()
	c.a.postSend(c.qa, &verbs.SendWR{ID: 8, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGL: []verbs.SGE{c.a.sge(srcOff+1000, 10)}})
	wc := waitOne(t, c.b.rcq)
	checkWC(t, "receive of the SEND behind", wc, id, verbs.WCSuccess, verbs.WCRecv)
	if wc.ByteLen != 10 || wc.Flags&verbs.WCFlagWithImm != 0 {
		t.Fatalf("receive of the SEND behind: byte_len %d, flags %#x; want 10, no immediate", wc.ByteLen, wc.Flags)
	}
	checkWC(t, "the SEND behind", waitOne(t, c.a.scq), 8, verbs.WCSuccess, verbs.WCSend)
}

func testWrite(t *testing.T, p Pair) {
	c := newRC(t, p, verbs.QPCap{})
	for i, n := range []int{1, 8, 3000} {
		writeOne(t, c, n, i)
	}
	// A WRITE consumes no receive WR: the SEND behind it finds the one
	// posted before it.
	c.b.postRecv(c.qb, 77, dstOff+8192, 64)
	fill(c.a.mem[srcOff:srcOff+100], 9)
	c.a.postSend(c.qa, &verbs.SendWR{ID: 3, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
		SGL: []verbs.SGE{c.a.sge(srcOff, 100)}, RemoteAddr: c.b.va(dstOff), RKey: c.b.mr.RKey()})
	checkWC(t, "write", waitOne(t, c.a.scq), 3, verbs.WCSuccess, verbs.WCRDMAWrite)
	sendBehind(t, c, 77)
	checkBytes(t, "written data", c.b.mem[dstOff:dstOff+100], c.a.mem[srcOff:srcOff+100])
}

// testWriteImm: the data lands where the WR says, the immediate comes in a
// receive completion that consumed a receive WR (whose buffer stays
// untouched), and byte_len is the WRITE's length.
func testWriteImm(t *testing.T, p Pair) {
	c := newRC(t, p, verbs.QPCap{})
	a, b := c.a, c.b
	const n, recvOff = 1500, dstOff + 64<<10
	fill(a.mem[srcOff:srcOff+n], 4)
	memset(b.mem[dstOff:dstOff+n], untouch)
	memset(b.mem[recvOff:recvOff+256], untouch)
	c.ready(t)
	b.postRecv(c.qb, 5, recvOff, 256)
	a.postSend(c.qa, &verbs.SendWR{ID: 6, Opcode: verbs.WRRDMAWriteWithImm, Flags: verbs.SendSignaled, Imm: 0xA1B2C3D4,
		SGL: []verbs.SGE{a.sge(srcOff, n)}, RemoteAddr: b.va(dstOff), RKey: b.mr.RKey()})
	wc := waitOne(t, b.rcq)
	checkWC(t, "receive", wc, 5, verbs.WCSuccess, verbs.WCRecvRDMAWithImm)
	if wc.Flags&verbs.WCFlagWithImm == 0 || wc.Imm != 0xA1B2C3D4 || wc.ByteLen != n {
		t.Fatalf("receive: flags %#x imm %#x byte_len %d; want WITH_IMM, 0xa1b2c3d4, %d", wc.Flags, wc.Imm, wc.ByteLen, n)
	}
	checkWC(t, "write with imm", waitOne(t, a.scq), 6, verbs.WCSuccess, verbs.WCRDMAWrite)
	checkBytes(t, "written data", b.mem[dstOff:dstOff+n], a.mem[srcOff:srcOff+n])
	checkFilled(t, "receive buffer of a WRITE with immediate", b.mem[recvOff:recvOff+256], untouch)
}

// readOne READs n bytes of pattern seed from b's srcOff into a's dstOff.
func readOne(t *testing.T, c *rc, n, seed int) {
	t.Helper()
	a, b := c.a, c.b
	fill(b.mem[srcOff:srcOff+n], seed)
	memset(a.mem[dstOff:dstOff+n+64], untouch)
	c.ready(t)
	a.postSend(c.qa, &verbs.SendWR{ID: 4, Opcode: verbs.WRRDMARead, Flags: verbs.SendSignaled,
		SGL: []verbs.SGE{a.sge(dstOff, n)}, RemoteAddr: b.va(srcOff), RKey: b.mr.RKey()})
	wc := waitOne(t, a.scq)
	checkWC(t, "read", wc, 4, verbs.WCSuccess, verbs.WCRDMARead)
	if wc.ByteLen != uint32(n) {
		t.Fatalf("read: byte_len %d, want %d", wc.ByteLen, n)
	}
	c.done(t) // B may reuse the memory read
	checkBytes(t, "read data", a.mem[dstOff:dstOff+n], b.mem[srcOff:srcOff+n])
	checkFilled(t, "memory past the read", a.mem[dstOff+n:dstOff+n+64], untouch)
}

func testRead(t *testing.T, p Pair) {
	c := newRC(t, p, verbs.QPCap{})
	if c.pa.ord == 0 {
		t.Skip("no RDMA READ: max_qp_init_rd_atom or max_qp_rd_atom is 0")
	}
	for i, n := range []int{1, 64, 3000} {
		readOne(t, c, n, i)
	}
	// A READ consumes no receive WR: the SEND behind it finds the one
	// posted before it.
	fill(c.b.mem[srcOff:srcOff+100], 9)
	c.ready(t)
	c.b.postRecv(c.qb, 77, dstOff+8192, 64)
	c.a.postSend(c.qa, &verbs.SendWR{ID: 4, Opcode: verbs.WRRDMARead, Flags: verbs.SendSignaled,
		SGL: []verbs.SGE{c.a.sge(dstOff, 100)}, RemoteAddr: c.b.va(srcOff), RKey: c.b.mr.RKey()})
	checkWC(t, "read", waitOne(t, c.a.scq), 4, verbs.WCSuccess, verbs.WCRDMARead)
	sendBehind(t, c, 77)
	checkBytes(t, "read data", c.a.mem[dstOff:dstOff+100], c.b.mem[srcOff:srcOff+100])
}

// testMultiPacket moves messages of one, two and three and a half path
// MTUs with each operation.
func testMultiPacket(t *testing.T, p Pair) {
	c := newRC(t, p, verbs.QPCap{})
	mtu := c.pa.mtu.Bytes()
	for i, n := range []int{mtu, 2 * mtu, 3*mtu + mtu/2 + 7} {
		t.Run(fmt.Sprintf("%dB", n), func(t *testing.T) {
			sendOne(t, c, verbs.WRSend, n, i, 0)
			writeOne(t, c, n, i+1)
			if c.pa.ord > 0 {
				readOne(t, c, n, i+2)
			}
		})
	}
}

// testQueueDepth fills the send queue: as many SENDs as receives are
// posted, each WR's data in its own slot, then as many WRITEs of which only
// the last is signaled, then (within the initiator depth the QP has) as
// many READs.
func testQueueDepth(t *testing.T, p Pair) {
	a, b := newSides(t, p)
	depth := min(64, a.attr.MaxQPWR, b.attr.MaxQPWR)
	cp := verbs.QPCap{MaxSendWR: uint32(depth), MaxRecvWR: uint32(depth)}
	c := connectRC(t, a, a.qp(verbs.QPTypeRC, cp, nil), b, b.qp(verbs.QPTypeRC, cp, nil))
	const slot = 1024
	size := func(i int) int { return 1 + i*(slot-1)/depth } // 1 .. slot
	for i := range depth {
		fill(a.mem[srcOff+i*slot:srcOff+(i+1)*slot], i)
	}
	memset(b.mem[dstOff:], untouch)

	// SENDs, each into its own receive.
	for i := range depth {
		b.postRecv(c.qb, uint64(1000+i), dstOff+i*slot, slot)
	}
	wrs := make([]*verbs.SendWR, depth)
	for i := range wrs {
		wrs[i] = &verbs.SendWR{ID: uint64(i), Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
			SGL: []verbs.SGE{a.sge(srcOff+i*slot, size(i))}}
	}
	if err := c.qa.PostSend(wrs...); err != nil {
		t.Fatalf("PostSend of %d SENDs: %v", depth, err)
	}
	// RC completes in order on both sides.
	for i, wc := range waitWC(t, b.rcq, depth) {
		checkWC(t, fmt.Sprintf("receive %d", i), wc, uint64(1000+i), verbs.WCSuccess, verbs.WCRecv)
		if wc.ByteLen != uint32(size(i)) {
			t.Fatalf("receive %d: byte_len %d, want %d", i, wc.ByteLen, size(i))
		}
		o := i * slot
		checkBytes(t, fmt.Sprintf("message %d", i), b.mem[dstOff+o:dstOff+o+size(i)], a.mem[srcOff+o:srcOff+o+size(i)])
	}
	for i, wc := range waitWC(t, a.scq, depth) {
		checkWC(t, fmt.Sprintf("send %d", i), wc, uint64(i), verbs.WCSuccess, verbs.WCSend)
	}

	// WRITEs of the same slots back over the received ones, unsignaled
	// but the last: one completion says they all are done.
	c.ready(t)
	for i := range depth {
		fill(a.mem[srcOff+i*slot:srcOff+(i+1)*slot], 100+i)
		wrs[i] = &verbs.SendWR{ID: uint64(2000 + i), Opcode: verbs.WRRDMAWrite,
			SGL: []verbs.SGE{a.sge(srcOff+i*slot, slot)}, RemoteAddr: b.va(dstOff + i*slot), RKey: b.mr.RKey()}
	}
	wrs[depth-1].Flags = verbs.SendSignaled
	if err := c.qa.PostSend(wrs...); err != nil {
		t.Fatalf("PostSend of %d WRITEs: %v", depth, err)
	}
	checkWC(t, "last write", waitOne(t, a.scq), uint64(2000+depth-1), verbs.WCSuccess, verbs.WCRDMAWrite)
	noWC(t, "unsignaled writes", a.scq)
	c.done(t)
	checkBytes(t, "written slots", b.mem[dstOff:dstOff+depth*slot], a.mem[srcOff:srcOff+depth*slot])

	// READs: more than the initiator depth lets out at once, so the
	// requester must hold some back.
	if c.pa.ord == 0 {
		return
	}
	memset(a.mem[dstOff:], untouch)
	for i := range depth {
		wrs[i] = &verbs.SendWR{ID: uint64(3000 + i), Opcode: verbs.WRRDMARead, Flags: verbs.SendSignaled,
			SGL: []verbs.SGE{a.sge(dstOff+i*slot, size(i))}, RemoteAddr: b.va(dstOff + i*slot), RKey: b.mr.RKey()}
	}
	if err := c.qa.PostSend(wrs...); err != nil {
		t.Fatalf("PostSend of %d READs: %v", depth, err)
	}
	for i, wc := range waitWC(t, a.scq, depth) {
		checkWC(t, fmt.Sprintf("read %d", i), wc, uint64(3000+i), verbs.WCSuccess, verbs.WCRDMARead)
		o := i * slot
		checkBytes(t, fmt.Sprintf("read %d", i), a.mem[dstOff+o:dstOff+o+size(i)], b.mem[dstOff+o:dstOff+o+size(i)])
	}
}

// testQueryAfterRTS: Query reports what the QP was given on its way to
// RTS.
func testQueryAfterRTS(t *testing.T, p Pair) {
	cp := verbs.QPCap{MaxSendWR: 8, MaxRecvWR: 8, MaxSendSGE: 1, MaxRecvSGE: 1}
	c := newRC(t, p, cp)
	for _, q := range []struct {
		name string
		s    *side
		qp   interface {
			Query() (verbs.QPAttr, error)
			State() verbs.QPState
		}
		p rcPath
	}{{"A", c.a, c.qa, c.pa}, {"B", c.b, c.qb, c.pb}} {
		attr, err := q.qp.Query()
		if err != nil {
			t.Fatalf("%s: Query: %v", q.name, err)
		}
		if attr.State != verbs.QPSRTS || q.qp.State() != verbs.QPSRTS {
			t.Errorf("%s: state %v (State() %v), want RTS", q.name, attr.State, q.qp.State())
		}
		if attr.PathMTU != q.p.mtu || attr.DestQPN != q.p.destQPN || attr.RQPSN != q.p.rqPSN || attr.SQPSN != q.p.sqPSN {
			t.Errorf("%s: path MTU %v, dest QPN %#x, RQ PSN %#x, SQ PSN %#x; want %v, %#x, %#x, %#x", q.name,
				attr.PathMTU, attr.DestQPN, attr.RQPSN, attr.SQPSN, q.p.mtu, q.p.destQPN, q.p.rqPSN, q.p.sqPSN)
		}
		if attr.Timeout != timeout || attr.RetryCnt != retries || attr.RNRRetry != retries || attr.MinRNRTimer != rnrTimer {
			t.Errorf("%s: timeout %d, retry %d, RNR retry %d, min RNR timer %d; want %d, %d, %d, %d", q.name,
				attr.Timeout, attr.RetryCnt, attr.RNRRetry, attr.MinRNRTimer, timeout, retries, retries, rnrTimer)
		}
		if attr.MaxRdAtomic != q.p.ord || attr.MaxDestRdAtomic != q.p.ird {
			t.Errorf("%s: max_rd_atomic %d, max_dest_rd_atomic %d; want %d, %d", q.name, attr.MaxRdAtomic, attr.MaxDestRdAtomic, q.p.ord, q.p.ird)
		}
		if attr.AV.DGID != q.p.av.DGID || attr.AV.SGIDIndex != q.p.av.SGIDIndex || attr.PortNum != 1 {
			t.Errorf("%s: AV DGID %v SGID index %d port %d; want %v, %d, 1", q.name, attr.AV.DGID, attr.AV.SGIDIndex, attr.PortNum, q.p.av.DGID, q.p.av.SGIDIndex)
		}
		if c := attr.Cap; c.MaxSendWR < cp.MaxSendWR || c.MaxRecvWR < cp.MaxRecvWR || c.MaxSendSGE < cp.MaxSendSGE || c.MaxRecvSGE < cp.MaxRecvSGE {
			t.Errorf("%s: capabilities %+v, less than the %+v asked", q.name, c, cp)
		}
	}
}
