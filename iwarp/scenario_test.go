package iwarp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/rnic/rnic/iwarp/wire"
	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/transport"
)

func TestConnectPrivateDataIRDORD(t *testing.T) {
	o := defaultOpts()
	o.pdA, o.pdB = []byte("hello from A"), []byte("welcome, A")
	o.ird, o.ord = 8, 4
	o.trace = true
	h := newHarness(t, o)
	if h.result == nil || h.result.Err != nil {
		h.dumpTrace()
		t.Fatalf("connect result %+v", h.result)
	}
	r := h.req
	if string(r.PrivateData) != "hello from A" || r.Rev != 2 || !r.HasIRDORD || r.IRD != 8 || r.ORD != 4 || !r.PeerToPeer || !r.CRC {
		t.Fatalf("request %+v", r)
	}
	res := h.result
	if string(res.PrivateData) != "welcome, A" || res.Rev != 2 || res.IRD != 8 || res.ORD != 4 || !res.CRC || res.RTR != "write" {
		t.Fatalf("result %+v", res)
	}
	h.wantState(h.a, verbs.QPSRTS)
	h.wantState(h.b, verbs.QPSRTS)
	if !h.a.established() || !h.b.established() {
		t.Fatal("no Established event")
	}
	// ORD lowered to the peer's IRD; IRD as given.
	if h.a.qp.ord != 4 || h.a.qp.ird != 8 {
		t.Fatalf("A ird/ord %d/%d", h.a.qp.ird, h.a.qp.ord)
	}
	if h.a.stack.ctr.Get(RTRSent) != 1 || h.b.stack.ctr.Get(RTRRcvd) != 1 {
		t.Fatal("no RTR")
	}
	// The RTR is a zero-length Write to STag 1 and the first FPDU.
	_, segs := fpdus(t, h.wireBuf[transport.AtoB], wire.Framing{CRC: true})
	if len(segs) != 1 {
		t.Fatalf("%d FPDUs from A", len(segs))
	}
	rtr := wire.DDPHeader(segs[0])
	if !rtr.Tagged() || rtr.Opcode() != wire.OpWrite || rtr.STag() != 1 || len(segs[0]) != wire.DDPTaggedLen {
		t.Fatalf("RTR %x", segs[0])
	}
}

func TestSendWriteRead(t *testing.T) {
	for _, chop := range []float64{0, 0.5} {
		o := defaultOpts()
		o.sim.Chop = chop
		o.sim.Seed = 7
		h := newHarness(t, o)
		a, b := h.a, h.b
		const n = 10000 // several FPDUs
		fill(a.buf[:n], 1)
		b.recv(1, 0, n)
		a.post(t, verbs.SendWR{ID: 10, Opcode: verbs.WRSend, SGL: []verbs.SGE{a.sge(0, n)}})
		// WRITE A[n:2n] → B[2n:3n]
		fill(a.buf[n:2*n], 2)
		a.post(t, verbs.SendWR{ID: 11, Opcode: verbs.WRRDMAWrite, SGL: []verbs.SGE{a.sge(n, n)}, RemoteAddr: b.va(2 * n), RKey: b.mr.RKey()})
		// READ B[4n:5n] → A[4n:5n]
		fill(b.buf[4*n:5*n], 3)
		a.post(t, verbs.SendWR{ID: 12, Opcode: verbs.WRRDMARead, SGL: []verbs.SGE{a.sge(4*n, n)}, RemoteAddr: b.va(4 * n), RKey: b.mr.RKey()})
		h.run()
		wantWC(t, a.scq.take(),
			verbs.WC{WRID: 10, Opcode: verbs.WCSend},
			verbs.WC{WRID: 11, Opcode: verbs.WCRDMAWrite},
			verbs.WC{WRID: 12, Opcode: verbs.WCRDMARead, ByteLen: n})
		wantWC(t, b.rcq.take(), verbs.WC{WRID: 1, Opcode: verbs.WCRecv, ByteLen: n})
		if !bytes.Equal(b.buf[:n], a.buf[:n]) || !bytes.Equal(b.buf[2*n:3*n], a.buf[n:2*n]) || !bytes.Equal(a.buf[4*n:5*n], b.buf[4*n:5*n]) {
			t.Fatal("data mismatch")
		}
		if h.b.stack.ctr.Get(ReadResponsesSent) < n/1400 {
			t.Fatalf("read response FPDUs %d", h.b.stack.ctr.Get(ReadResponsesSent))
		}
		// Every FPDU fits the MSS.
		_, segs := fpdus(t, h.wireBuf[transport.AtoB], wire.Framing{CRC: true})
		for _, s := range segs {
			if wire.FPDULen(len(s)) > DefaultMSS {
				t.Fatalf("FPDU of %d bytes", wire.FPDULen(len(s)))
			}
		}
	}
}

func TestSendSolicitedInvalidateAtomics(t *testing.T) {
	h := newHarness(t, defaultOpts())
	a, b := h.a, h.b
	// A fast-register MR on B that A's Send with Invalidate invalidates.
	fmr, err := b.mem.AllocFastMR(1)
	if err != nil {
		t.Fatal(err)
	}
	key, err := b.mem.FastRegister(fmr, b.buf[8192:16384], 0x90000, memory.LocalWrite|memory.RemoteWrite)
	if err != nil {
		t.Fatal(err)
	}
	b.recv(1, 0, 100)
	b.recv(2, 100, 100)
	copy(a.buf, "ping")
	a.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRSend, Flags: verbs.SendSignaled | verbs.SendSolicited, SGL: []verbs.SGE{a.sge(0, 4)}})
	a.post(t, verbs.SendWR{ID: 2, Opcode: verbs.WRSendWithInv, SGL: []verbs.SGE{a.sge(0, 4)}, InvRKey: key})
	// Atomics on B's word at 4096.
	binary.NativeEndian.PutUint64(b.buf[4096:], 100)
	a.post(t, verbs.SendWR{ID: 3, Opcode: verbs.WRAtomicFetchAdd, SGL: []verbs.SGE{a.sge(512, 8)}, RemoteAddr: b.va(4096), RKey: b.mr.RKey(), CompareAdd: 5})
	a.post(t, verbs.SendWR{ID: 4, Opcode: verbs.WRAtomicCmpSwp, SGL: []verbs.SGE{a.sge(520, 8)}, RemoteAddr: b.va(4096), RKey: b.mr.RKey(), CompareAdd: 105, Swap: 7})
	// Inline send, unsignaled (not completed).
	b.recv(3, 200, 100)
	a.post(t, verbs.SendWR{ID: 5, Opcode: verbs.WRSend, Flags: verbs.SendInline, Inline: []byte("inline!")})
	h.run()
	wantWC(t, a.scq.take(), verbs.WC{WRID: 1, Opcode: verbs.WCSend}, verbs.WC{WRID: 2, Opcode: verbs.WCSend},
		verbs.WC{WRID: 3, Opcode: verbs.WCFetchAdd}, verbs.WC{WRID: 4, Opcode: verbs.WCCompSwap})
	rw := b.rcq.take()
	wantWC(t, rw, verbs.WC{WRID: 1, Opcode: verbs.WCRecv, ByteLen: 4}, verbs.WC{WRID: 2, Opcode: verbs.WCRecv, ByteLen: 4},
		verbs.WC{WRID: 3, Opcode: verbs.WCRecv, ByteLen: 7})
	if rw[1].Flags&verbs.WCFlagWithInv == 0 || rw[1].InvRKey != key || rw[0].Flags&verbs.WCFlagWithInv != 0 {
		t.Fatalf("invalidate flags: %+v", rw)
	}
	if b.rcq.solicited != 1 {
		t.Fatalf("solicited %d", b.rcq.solicited)
	}
	if string(b.buf[200:207]) != "inline!" {
		t.Fatalf("inline data %q", b.buf[200:207])
	}
	if _, f := b.mem.CheckRemote(1, b.qp.QPN(), key, 0x90000, 8, memory.RemoteWrite); f != memory.Invalidated {
		t.Fatalf("key after Send with Invalidate: %v", f)
	}
	if got := binary.NativeEndian.Uint64(a.buf[512:]); got != 100 {
		t.Fatalf("fetch-add returned %d", got)
	}
	if got := binary.NativeEndian.Uint64(a.buf[520:]); got != 105 {
		t.Fatalf("cmp-swap returned %d", got)
	}
	if got := binary.NativeEndian.Uint64(b.buf[4096:]); got != 7 {
		t.Fatalf("word is %d", got)
	}
}

func TestReject(t *testing.T) {
	o := defaultOpts()
	o.rejectPD = []byte("go away")
	h := newHarness(t, o)
	if h.result == nil || !errors.Is(h.result.Err, ErrRejected) || string(h.result.PrivateData) != "go away" {
		t.Fatalf("result %+v", h.result)
	}
	h.wantState(h.a, verbs.QPSInit)
	if h.b.stack.ctr.Get(MPARejectsSent) != 1 || h.a.stack.ctr.Get(MPARejectsRcvd) != 1 {
		t.Fatal("reject counters")
	}
	// The QP may connect again.
	o2 := defaultOpts()
	h.lis.Close()
	h.listen(o2)
	h.connect(o2)
	if h.result.Err != nil {
		t.Fatalf("second connect: %v", h.result.Err)
	}
	h.wantState(h.a, verbs.QPSRTS)
}
