package roce

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
)

func TestSendMultiPacket(t *testing.T) {
	for _, n := range []int{0, 1, 1023, 1024, 1025, 4096, 10000} {
		h := newHarness(t, defaultOpts())
		a, b := h.a, h.b
		fill(a.buf[:n], 3)
		b.recv(77, 0x40000, 16384)
		a.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRSend, SGL: []verbs.SGE{a.sge(0, n)}, Flags: verbs.SendSignaled | verbs.SendSolicited})
		h.run()
		wantWC(t, a.scq.take(), verbs.WC{WRID: 1, Opcode: verbs.WCSend})
		wantWC(t, b.rcq.take(), verbs.WC{WRID: 77, Opcode: verbs.WCRecv, ByteLen: uint32(n)})
		if !bytes.Equal(b.buf[0x40000:0x40000+n], a.buf[:n]) {
			t.Fatalf("n=%d: data differs", n)
		}
		if b.rcq.solicited != 1 {
			t.Fatalf("solicited event not signalled")
		}
		if got := a.stack.ctr.Get(SentPkts); n > 0 && got != uint64((n+1023)/1024) {
			t.Fatalf("n=%d: %d packets sent", n, got)
		}
	}
}

func TestSendWithImmAndInvalidate(t *testing.T) {
	h := newHarness(t, defaultOpts())
	a, b := h.a, h.b
	b.recv(1, 0, 100)
	b.recv(2, 100, 100)
	a.post(t, verbs.SendWR{ID: 10, Opcode: verbs.WRSendWithImm, Imm: 0xdeadbeef, SGL: []verbs.SGE{a.sge(0, 10)}})
	// The target of the invalidation: a fast-register MR of B's.
	fmr, err := b.mem.AllocFastMR(1)
	if err != nil {
		t.Fatal(err)
	}
	key, err := b.mem.FastRegister(fmr, make([]byte, 64), 0x900000, memory.LocalWrite|memory.RemoteWrite)
	if err != nil {
		t.Fatal(err)
	}
	a.post(t, verbs.SendWR{ID: 11, Opcode: verbs.WRSendWithInv, InvRKey: key, SGL: []verbs.SGE{a.sge(0, 20)}})
	h.run()
	wantWC(t, a.scq.take(), verbs.WC{WRID: 10, Opcode: verbs.WCSend}, verbs.WC{WRID: 11, Opcode: verbs.WCSend})
	got := b.rcq.take()
	wantWC(t, got, verbs.WC{WRID: 1, Opcode: verbs.WCRecv, ByteLen: 10}, verbs.WC{WRID: 2, Opcode: verbs.WCRecv, ByteLen: 20})
	if got[0].Imm != 0xdeadbeef || got[0].Flags&verbs.WCFlagWithImm == 0 {
		t.Fatalf("imm: %+v", got[0])
	}
	if got[1].InvRKey != key || got[1].Flags&verbs.WCFlagWithInv == 0 {
		t.Fatalf("inv: %+v", got[1])
	}
	if fmr.Valid() {
		t.Fatal("the rkey was not invalidated")
	}
}

func TestWriteReadAtomics(t *testing.T) {
	h := newHarness(t, defaultOpts())
	a, b := h.a, h.b
	fill(a.buf[:20000], 9)
	a.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRRDMAWrite, SGL: []verbs.SGE{a.sge(0, 5000), a.sge(5000, 15000)},
		RemoteAddr: b.va(0x1000), RKey: b.mr.RKey()})
	b.recv(50, 0x80000, 16)
	a.post(t, verbs.SendWR{ID: 2, Opcode: verbs.WRRDMAWriteWithImm, Imm: 42, SGL: []verbs.SGE{a.sge(0, 3000)},
		RemoteAddr: b.va(0x20000), RKey: b.mr.RKey()})
	fill(b.buf[0x30000:0x30000+9000], 200)
	a.post(t, verbs.SendWR{ID: 3, Opcode: verbs.WRRDMARead, SGL: []verbs.SGE{a.sge(0x50000, 4000), a.sge(0x60000, 5000)},
		RemoteAddr: b.va(0x30000), RKey: b.mr.RKey()})
	binary.NativeEndian.PutUint64(b.buf[0x100:], 5)
	a.post(t, verbs.SendWR{ID: 4, Opcode: verbs.WRAtomicCmpSwp, SGL: []verbs.SGE{a.sge(0x70000, 8)},
		RemoteAddr: b.va(0x100), RKey: b.mr.RKey(), CompareAdd: 5, Swap: 99})
	a.post(t, verbs.SendWR{ID: 5, Opcode: verbs.WRAtomicFetchAdd, SGL: []verbs.SGE{a.sge(0x70008, 8)},
		RemoteAddr: b.va(0x100), RKey: b.mr.RKey(), CompareAdd: 1})
	a.post(t, verbs.SendWR{ID: 6, Opcode: verbs.WRRDMARead, SGL: []verbs.SGE{a.sge(0x78000, 0)},
		RemoteAddr: b.va(0), RKey: 0})
	h.run()
	wantWC(t, a.scq.take(), verbs.WC{WRID: 1, Opcode: verbs.WCRDMAWrite}, verbs.WC{WRID: 2, Opcode: verbs.WCRDMAWrite},
		verbs.WC{WRID: 3, Opcode: verbs.WCRDMARead, ByteLen: 9000}, verbs.WC{WRID: 4, Opcode: verbs.WCCompSwap, ByteLen: 8},
		verbs.WC{WRID: 5, Opcode: verbs.WCFetchAdd, ByteLen: 8}, verbs.WC{WRID: 6, Opcode: verbs.WCRDMARead})
	if !bytes.Equal(b.buf[0x1000:0x1000+20000], a.buf[:20000]) {
		t.Fatal("WRITE data differs")
	}
	rc := b.rcq.take()
	wantWC(t, rc, verbs.WC{WRID: 50, Opcode: verbs.WCRecvRDMAWithImm, ByteLen: 3000})
	if rc[0].Imm != 42 {
		t.Fatalf("imm %d", rc[0].Imm)
	}
	if !bytes.Equal(a.buf[0x50000:0x50000+4000], b.buf[0x30000:0x30000+4000]) ||
		!bytes.Equal(a.buf[0x60000:0x60000+5000], b.buf[0x30000+4000:0x30000+9000]) {
		t.Fatal("READ data differs")
	}
	if o := binary.NativeEndian.Uint64(a.buf[0x70000:]); o != 5 {
		t.Fatalf("CmpSwap original %d, want 5", o)
	}
	if o := binary.NativeEndian.Uint64(a.buf[0x70008:]); o != 99 {
		t.Fatalf("FetchAdd original %d, want 99", o)
	}
	if v := binary.NativeEndian.Uint64(b.buf[0x100:]); v != 100 {
		t.Fatalf("remote value %d, want 100", v)
	}
}

// INLINE sends: the bytes given in wr.Inline (no SGL), and the SGL copied
// at post time, so changing the buffer afterwards changes nothing.
func TestInlineSend(t *testing.T) {
	h := newHarness(t, defaultOpts())
	a, b := h.a, h.b
	b.recv(1, 0, 100)
	b.recv(2, 100, 100)
	a.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRSend, Flags: verbs.SendSignaled | verbs.SendInline, Inline: []byte("inline bytes")})
	copy(a.buf, "from the sgl")
	a.post(t, verbs.SendWR{ID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled | verbs.SendInline, SGL: []verbs.SGE{a.sge(0, 12)}})
	copy(a.buf, "overwritten!")
	h.run()
	wantWC(t, a.scq.take(), verbs.WC{WRID: 1, Opcode: verbs.WCSend}, verbs.WC{WRID: 2, Opcode: verbs.WCSend})
	wantWC(t, b.rcq.take(), verbs.WC{WRID: 1, Opcode: verbs.WCRecv, ByteLen: 12}, verbs.WC{WRID: 2, Opcode: verbs.WCRecv, ByteLen: 12})
	if string(b.buf[0:12]) != "inline bytes" || string(b.buf[100:112]) != "from the sgl" {
		t.Fatalf("received %q and %q", b.buf[0:12], b.buf[100:112])
	}
	// Too much inline data is refused at post time.
	wr := verbs.SendWR{ID: 3, Opcode: verbs.WRSend, Flags: verbs.SendInline, Inline: make([]byte, 257)}
	if err := a.qp.PostSend(&wr); err == nil {
		t.Fatal("257 inline bytes accepted with max_inline_data 256")
	}
}
