package iwarp

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/rnic/rnic/iwarp/wire"
	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/transport"
)

// RDMA READs with several sink SGEs: one Read Request per (non-empty)
// sink SGE, each counted against ORD, the WR completed once every
// response is placed.

// sinkMR is a local MR of its own that a READ's sink SGE points into.
type sinkMR struct {
	buf []byte
	mr  *memory.Region
	va  uint64
}

const sinkGuard = 0xEE

// sinkMRs registers one MR per size on n, each with room for a guard
// byte before and after the sink at offset 5 (an odd address).
func (n *node) sinkMRs(t testing.TB, sizes []int) []sinkMR {
	t.Helper()
	ms := make([]sinkMR, len(sizes))
	for i, sz := range sizes {
		va := uint64(0x4000000) + uint64(i)<<24
		buf := bytes.Repeat([]byte{sinkGuard}, sz+16)
		mr, err := n.mem.Register(1, buf, va, memory.LocalWrite)
		if err != nil {
			t.Fatal(err)
		}
		ms[i] = sinkMR{buf: buf, mr: mr, va: va}
	}
	return ms
}

func (m sinkMR) sge(length int) verbs.SGE {
	return verbs.SGE{Addr: m.va + 5, Length: uint32(length), LKey: m.mr.LKey()}
}

// check compares the sink with want and the guard bytes around it.
func (m sinkMR) check(t testing.TB, what string, want []byte) {
	t.Helper()
	got := m.buf[5 : 5+len(want)]
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: sink data mismatch", what)
	}
	for i, c := range m.buf {
		if (i < 5 || i >= 5+len(want)) && c != sinkGuard {
			t.Fatalf("%s: guard byte %d overwritten", what, i)
		}
	}
}

// readRequests returns the Read Requests (not the RTR) a side sent.
func (h *harness) readRequests(dir transport.Direction, f wire.Framing) []wire.ReadRequestFields {
	_, segs := fpdus(h.t, h.wireBuf[dir], f)
	var rrs []wire.ReadRequestFields
	for _, s := range segs {
		var seg wire.Segment
		if seg.Decode(s) == nil && seg.Opcode() == wire.OpReadRequest && seg.ReadRequest().SinkSTag() != 1 {
			rrs = append(rrs, seg.ReadRequest().Fields())
		}
	}
	return rrs
}

var readSizes = []int{1, 1000, 4096 + 7, 3, 20000 + 1, 777}

func TestReadSinkSGEs(t *testing.T) {
	for _, nsge := range []int{2, 3, 6} {
		for _, ord := range []uint16{16, 2, 1} {
			for _, chop := range []float64{0, 0.5} {
				t.Run(fmt.Sprintf("sge=%d/ord=%d/chop=%v", nsge, ord, chop), func(t *testing.T) {
					testReadSinkSGEs(t, nsge, ord, chop)
				})
			}
		}
	}
}

func testReadSinkSGEs(t *testing.T, nsge int, ord uint16, chop float64) {
	o := defaultOpts()
	o.sim.Chop, o.sim.Seed = chop, uint64(nsge)*10+uint64(ord)
	o.sim.SendBuffer = 16 << 10
	// B's IRD equals A's ORD: a Read Request beyond it would be refused
	// with a Terminate (IRD exceeded), so this checks the ORD accounting.
	o.ird, o.ord = ord, ord
	o.maxSGE = 8
	o.trace = true
	h := newHarness(t, o)
	if h.result == nil || h.result.Err != nil {
		t.Fatalf("connect: %+v", h.result)
	}
	defer func() {
		if t.Failed() {
			h.dumpTrace()
		}
	}()
	a, b := h.a, h.b
	sizes := readSizes[:nsge]
	total := 0
	for _, s := range sizes {
		total += s
	}
	// READ 2: B[333:333+total] into nsge MRs of A.
	m1 := a.sinkMRs(t, sizes)
	sgl1 := make([]verbs.SGE, nsge)
	for i, m := range m1 {
		sgl1[i] = m.sge(sizes[i])
	}
	const src1 = 333
	fill(b.buf[src1:src1+total], 9)
	// READ 5: zero-length SGEs at the ends and between, the rest of
	// sizes in reverse order, B[200001:...] into other MRs.
	var sizes2 []int
	for i := len(sizes) - 1; i >= 0; i-- {
		sizes2 = append(sizes2, sizes[i])
	}
	m2 := a.sinkMRs(t, sizes2)
	sgl2 := []verbs.SGE{{Addr: a.va(0), LKey: a.mr.LKey()}}
	for i, m := range m2 {
		sgl2 = append(sgl2, m.sge(sizes2[i]))
		if i == 0 {
			sgl2 = append(sgl2, verbs.SGE{Addr: a.va(5), LKey: a.mr.LKey()})
		}
	}
	sgl2 = append(sgl2, verbs.SGE{Addr: a.va(7), LKey: a.mr.LKey()})
	if len(sgl2) > 8 {
		sgl2 = sgl2[:8]
	}
	const src2 = 200001
	fill(b.buf[src2:src2+total], 77)

	fill(a.buf[:5000], 1)
	head := bytes.Clone(a.buf[:10]) // under READ 5's zero-length SGEs
	b.recv(100, 700000, 5000)
	a.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRSend, SGL: []verbs.SGE{a.sge(0, 5000)}})
	a.post(t, verbs.SendWR{ID: 2, Opcode: verbs.WRRDMARead, SGL: sgl1, RemoteAddr: b.va(src1), RKey: b.mr.RKey()})
	fill(a.buf[10000:13000], 2)
	a.post(t, verbs.SendWR{ID: 3, Opcode: verbs.WRRDMAWrite, SGL: []verbs.SGE{a.sge(10000, 3000)}, RemoteAddr: b.va(400000), RKey: b.mr.RKey()})
	fill(b.buf[500000:502000], 3)
	a.post(t, verbs.SendWR{ID: 4, Opcode: verbs.WRRDMARead, SGL: []verbs.SGE{a.sge(20000, 2000)}, RemoteAddr: b.va(500000), RKey: b.mr.RKey()})
	a.post(t, verbs.SendWR{ID: 5, Opcode: verbs.WRRDMARead, SGL: sgl2, RemoteAddr: b.va(src2), RKey: b.mr.RKey()})
	binary.NativeEndian.PutUint64(b.buf[600000:], 40)
	a.post(t, verbs.SendWR{ID: 6, Opcode: verbs.WRAtomicFetchAdd, SGL: []verbs.SGE{a.sge(30000, 8)}, RemoteAddr: b.va(600000), RKey: b.mr.RKey(), CompareAdd: 2})
	b.recv(101, 710000, 100)
	a.post(t, verbs.SendWR{ID: 7, Opcode: verbs.WRSend, Flags: verbs.SendSignaled | verbs.SendFence, SGL: []verbs.SGE{a.sge(0, 10)}})
	a.post(t, verbs.SendWR{ID: 8, Opcode: verbs.WRRDMARead, SGL: sgl1[:1], RemoteAddr: b.va(src1), RKey: b.mr.RKey()})
	h.run()
	h.wantState(a, verbs.QPSRTS)
	h.wantState(b, verbs.QPSRTS)
	total2 := 0
	for _, s := range sgl2 {
		total2 += int(s.Length)
	}
	wantWC(t, a.scq.take(),
		verbs.WC{WRID: 1, Opcode: verbs.WCSend},
		verbs.WC{WRID: 2, Opcode: verbs.WCRDMARead, ByteLen: uint32(total)},
		verbs.WC{WRID: 3, Opcode: verbs.WCRDMAWrite},
		verbs.WC{WRID: 4, Opcode: verbs.WCRDMARead, ByteLen: 2000},
		verbs.WC{WRID: 5, Opcode: verbs.WCRDMARead, ByteLen: uint32(total2)},
		verbs.WC{WRID: 6, Opcode: verbs.WCFetchAdd},
		verbs.WC{WRID: 7, Opcode: verbs.WCSend},
		verbs.WC{WRID: 8, Opcode: verbs.WCRDMARead, ByteLen: 1})
	wantWC(t, b.rcq.take(), verbs.WC{WRID: 100, Opcode: verbs.WCRecv, ByteLen: 5000}, verbs.WC{WRID: 101, Opcode: verbs.WCRecv, ByteLen: 10})
	// READ 2's data, SGE by SGE, in SGL order (READ 8 read the first
	// byte again: the same data).
	off := 0
	for i, m := range m1 {
		m.check(t, fmt.Sprintf("READ 2 SGE %d", i), b.buf[src1+off:src1+off+sizes[i]])
		off += sizes[i]
	}
	off = 0
	for i, m := range m2 {
		n := sizes2[i]
		m.check(t, fmt.Sprintf("READ 5 SGE %d", i), b.buf[src2+off:src2+off+n])
		off += n
	}
	if !bytes.Equal(a.buf[20000:22000], b.buf[500000:502000]) || !bytes.Equal(b.buf[400000:403000], a.buf[10000:13000]) {
		t.Fatal("READ 4 or WRITE 3: data mismatch")
	}
	if got := binary.NativeEndian.Uint64(a.buf[30000:]); got != 40 {
		t.Fatalf("fetch-add returned %d", got)
	}
	if !bytes.Equal(a.buf[:10], head) {
		t.Fatal("a zero-length sink SGE was written")
	}
	// On the wire: one Read Request per non-empty sink SGE.
	var want []wire.ReadRequestFields
	addReqs := func(sgl []verbs.SGE, src uint64) {
		for _, s := range sgl {
			if s.Length > 0 {
				want = append(want, wire.ReadRequestFields{SinkSTag: s.LKey, SinkTO: s.Addr, Size: s.Length, SourceSTag: b.mr.RKey(), SourceTO: src})
				src += uint64(s.Length)
			}
		}
	}
	addReqs(sgl1, b.va(src1))
	addReqs([]verbs.SGE{a.sge(20000, 2000)}, b.va(500000))
	addReqs(sgl2, b.va(src2))
	addReqs(sgl1[:1], b.va(src1))
	got := h.readRequests(transport.AtoB, a.qp.txFraming)
	if len(got) != len(want) {
		t.Fatalf("%d Read Requests, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Read Request %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if n := b.stack.ctr.Get(ReadRequestsRcvd); n != uint64(len(want)) {
		t.Fatalf("B received %d Read Requests, want %d", n, len(want))
	}
	if a.qp.req.rdOut != 0 || len(a.qp.req.orq) != 0 {
		t.Fatalf("ORQ not empty: rdOut %d, %d entries", a.qp.req.rdOut, len(a.qp.req.orq))
	}
}

// TestReadZeroLength: zero-length READs (no SGE, one or several empty
// SGEs) are still one zero-length Read Request each.
func TestReadZeroLength(t *testing.T) {
	h := newHarness(t, defaultOpts())
	a, b := h.a, h.b
	a.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRRDMARead, RemoteAddr: b.va(0), RKey: b.mr.RKey()})
	a.post(t, verbs.SendWR{ID: 2, Opcode: verbs.WRRDMARead, SGL: []verbs.SGE{a.sge(0, 0)}, RemoteAddr: b.va(0), RKey: b.mr.RKey()})
	a.post(t, verbs.SendWR{ID: 3, Opcode: verbs.WRRDMARead, SGL: []verbs.SGE{a.sge(0, 0), a.sge(10, 0), a.sge(20, 0)}, RemoteAddr: b.va(0), RKey: b.mr.RKey()})
	h.run()
	wantWC(t, a.scq.take(),
		verbs.WC{WRID: 1, Opcode: verbs.WCRDMARead},
		verbs.WC{WRID: 2, Opcode: verbs.WCRDMARead},
		verbs.WC{WRID: 3, Opcode: verbs.WCRDMARead})
	if n := len(h.readRequests(transport.AtoB, a.qp.txFraming)); n != 3 {
		t.Fatalf("%d Read Requests, want 3", n)
	}
	h.wantState(a, verbs.QPSRTS)
}

// TestReadSinkSGEErrors: an error on any part of a multi-SGE READ fails
// the WR, and the WRs behind it are flushed.
func TestReadSinkSGEErrors(t *testing.T) {
	for _, ord := range []uint16{16, 1} {
		t.Run(fmt.Sprintf("bad lkey/ord=%d", ord), func(t *testing.T) {
			o := defaultOpts()
			o.sim.Chop, o.sim.Seed = 0.5, 3
			o.ird, o.ord = ord, ord
			o.trace = true
			h := newHarness(t, o)
			a, b := h.a, h.b
			defer func() {
				if t.Failed() {
					h.dumpTrace()
				}
			}()
			ms := a.sinkMRs(t, []int{1000, 4096 + 7, 50})
			bad := ms[1].sge(4096 + 7)
			bad.LKey ^= 0x100
			fill(b.buf[:6000], 5)
			a.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRRDMARead, SGL: []verbs.SGE{ms[0].sge(1000), bad, ms[2].sge(50)},
				RemoteAddr: b.va(0), RKey: b.mr.RKey()})
			a.post(t, verbs.SendWR{ID: 2, Opcode: verbs.WRRDMAWrite, SGL: []verbs.SGE{a.sge(0, 10)}, RemoteAddr: b.va(10000), RKey: b.mr.RKey()})
			h.run()
			h.wantState(a, verbs.QPSErr)
			h.wantState(b, verbs.QPSErr)
			wantWC(t, a.scq.take(), verbs.WC{WRID: 1, Status: verbs.WCLocProtErr}, verbs.WC{WRID: 2, Status: verbs.WCWRFlushErr})
			ms[0].check(t, "first part", b.buf[:1000])
			ta := h.terminateOn(transport.AtoB, a.qp.txFraming)
			if ta == nil || ta.Code() != wire.TermDDPLocalCatastrophic {
				t.Fatalf("A's Terminate %v", ta)
			}
			if a.stack.ctr.Get(LocalProtErr) == 0 {
				t.Fatal("no local protection error counted")
			}
		})
		t.Run(fmt.Sprintf("last part out of bounds/ord=%d", ord), func(t *testing.T) {
			o := defaultOpts()
			o.sim.Chop, o.sim.Seed = 0.5, 4
			o.ird, o.ord = ord, ord
			o.trace = true
			h := newHarness(t, o)
			a, b := h.a, h.b
			defer func() {
				if t.Failed() {
					h.dumpTrace()
				}
			}()
			ms := a.sinkMRs(t, []int{100, 201, 300})
			fill(b.buf[bufSize-450:], 6)
			sgl := []verbs.SGE{ms[0].sge(100), ms[1].sge(201), ms[2].sge(300)}
			// Parts: [−450, −350), [−350, −149), [−149, +151): the last
			// runs past the end of B's MR.
			a.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRRDMARead, SGL: sgl, RemoteAddr: b.va(bufSize - 450), RKey: b.mr.RKey()})
			a.post(t, verbs.SendWR{ID: 2, Opcode: verbs.WRRDMAWrite, SGL: []verbs.SGE{a.sge(0, 10)}, RemoteAddr: b.va(10000), RKey: b.mr.RKey()})
			h.run()
			h.wantState(a, verbs.QPSErr)
			h.wantState(b, verbs.QPSErr)
			wantWC(t, a.scq.take(), verbs.WC{WRID: 1, Status: verbs.WCRemAccessErr}, verbs.WC{WRID: 2, Status: verbs.WCWRFlushErr})
			tb := h.terminateOn(transport.BtoA, b.qp.txFraming)
			if tb == nil || tb.Code() != wire.TermRDMAPBaseBounds || !tb.R() || len(tb.RDMAPHeader()) != wire.ReadRequestLen {
				t.Fatalf("B's Terminate %v", tb)
			}
			rr := wire.ReadRequest(tb.RDMAPHeader()).Fields()
			want := wire.ReadRequestFields{SinkSTag: sgl[2].LKey, SinkTO: sgl[2].Addr, Size: 300, SourceSTag: b.mr.RKey(), SourceTO: b.va(bufSize - 149)}
			if rr != want {
				t.Fatalf("terminated Read Request %+v, want %+v", rr, want)
			}
			if te := a.termErr(); te == nil || te.Code != wire.TermRDMAPBaseBounds {
				t.Fatalf("A's disconnect reason %v", te)
			}
			if ord == 1 {
				// The first two parts were answered before the third
				// was asked for.
				ms[0].check(t, "first part", b.buf[bufSize-450:bufSize-350])
				ms[1].check(t, "second part", b.buf[bufSize-350:bufSize-149])
			}
		})
	}
}
