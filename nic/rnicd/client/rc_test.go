// RC between two clients of one daemon (loopback on one NIC, as hardware
// does): SEND/RECV, RDMA WRITE (with immediate), READ, atomics, inline.

package client_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
	"github.com/rnic/rnic/nic/verbs"
)

func TestRCOneNIC(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{})
	a := newEnd(t, open(t, d, 0), verbs.QPTypeRC, 1<<16)
	b := newEnd(t, open(t, d, 0), verbs.QPTypeRC, 1<<16)
	connect(t, a, b, nil)
	rcOps(t, a, b)
}

func TestRCTwoNICs(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{NICs: 2})
	a := newEnd(t, open(t, d, 0), verbs.QPTypeRC, 1<<16)
	b := newEnd(t, open(t, d, 1), verbs.QPTypeRC, 1<<16)
	connect(t, a, b, nil)
	rcOps(t, a, b)
}

func rcOps(t *testing.T, a, b *end) {
	t.Run("send", func(t *testing.T) {
		msg := []byte("hello through rnicd")
		if err := b.qp.PostRecv(&verbs.RecvWR{ID: 7, SGL: sge(b, 0, 4096)}); err != nil {
			t.Fatal(err)
		}
		copy(a.buf, msg)
		if err := a.qp.PostSend(&verbs.SendWR{ID: 1, Opcode: verbs.WRSendWithImm, Imm: 0xabcd, Flags: verbs.SendSignaled,
			SGL: sge(a, 0, len(msg))}); err != nil {
			t.Fatal(err)
		}
		expectWC(t, a.cq, verbs.WCSuccess, verbs.WCSend)
		wc := expectWC(t, b.cq, verbs.WCSuccess, verbs.WCRecv)
		if wc.WRID != 7 || wc.ByteLen != uint32(len(msg)) || wc.Flags&verbs.WCFlagWithImm == 0 || wc.Imm != 0xabcd || wc.QPN != b.qp.QPN() {
			t.Errorf("receive completion %+v", wc)
		}
		if !bytes.Equal(b.buf[:len(msg)], msg) {
			t.Errorf("received %q, want %q", b.buf[:len(msg)], msg)
		}
	})
	t.Run("inline", func(t *testing.T) {
		if err := b.qp.PostRecv(&verbs.RecvWR{ID: 8, SGL: sge(b, 0, 4096)}); err != nil {
			t.Fatal(err)
		}
		copy(a.buf[100:], "gathered at post time")
		wr := &verbs.SendWR{ID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled | verbs.SendInline, SGL: sge(a, 100, 21)}
		if err := a.qp.PostSend(wr); err != nil {
			t.Fatal(err)
		}
		copy(a.buf[100:], "OVERWRITTEN AFTERWARD") // inline data was copied at post time
		expectWC(t, a.cq, verbs.WCSuccess, verbs.WCSend)
		expectWC(t, b.cq, verbs.WCSuccess, verbs.WCRecv)
		if got := string(b.buf[:21]); got != "gathered at post time" {
			t.Errorf("received %q", got)
		}
		// Inline bytes given directly.
		if err := b.qp.PostRecv(&verbs.RecvWR{ID: 9, SGL: sge(b, 0, 4096)}); err != nil {
			t.Fatal(err)
		}
		if err := a.qp.PostSend(&verbs.SendWR{ID: 3, Opcode: verbs.WRSend, Flags: verbs.SendSignaled | verbs.SendInline, Inline: []byte("direct")}); err != nil {
			t.Fatal(err)
		}
		expectWC(t, a.cq, verbs.WCSuccess, verbs.WCSend)
		if wc := expectWC(t, b.cq, verbs.WCSuccess, verbs.WCRecv); wc.ByteLen != 6 || string(b.buf[:6]) != "direct" {
			t.Errorf("received %d bytes %q", wc.ByteLen, b.buf[:6])
		}
	})
	t.Run("write", func(t *testing.T) {
		data := bytes.Repeat([]byte("0123456789abcdef"), 2048) // 32 KiB: many packets
		copy(a.buf[4096:], data)
		if err := a.qp.PostSend(&verbs.SendWR{ID: 4, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
			SGL: sge(a, 4096, len(data)), RemoteAddr: b.mr.Addr() + 8192, RKey: b.mr.RKey()}); err != nil {
			t.Fatal(err)
		}
		expectWC(t, a.cq, verbs.WCSuccess, verbs.WCRDMAWrite)
		if !bytes.Equal(b.buf[8192:8192+len(data)], data) {
			t.Error("RDMA WRITE: data differs at the target")
		}
		// With immediate: the target consumes a receive WQE.
		if err := b.qp.PostRecv(&verbs.RecvWR{ID: 10}); err != nil {
			t.Fatal(err)
		}
		copy(a.buf[4096:], "imm")
		if err := a.qp.PostSend(&verbs.SendWR{ID: 5, Opcode: verbs.WRRDMAWriteWithImm, Imm: 77, Flags: verbs.SendSignaled,
			SGL: sge(a, 4096, 3), RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey()}); err != nil {
			t.Fatal(err)
		}
		expectWC(t, a.cq, verbs.WCSuccess, verbs.WCRDMAWrite)
		wc := expectWC(t, b.cq, verbs.WCSuccess, verbs.WCRecvRDMAWithImm)
		if wc.Imm != 77 || wc.WRID != 10 || string(b.buf[:3]) != "imm" {
			t.Errorf("WRITE_WITH_IMM: completion %+v, data %q", wc, b.buf[:3])
		}
	})
	t.Run("read", func(t *testing.T) {
		copy(b.buf[20000:], "read me from the responder")
		if err := a.qp.PostSend(&verbs.SendWR{ID: 6, Opcode: verbs.WRRDMARead, Flags: verbs.SendSignaled,
			SGL: sge(a, 30000, 26), RemoteAddr: b.mr.Addr() + 20000, RKey: b.mr.RKey()}); err != nil {
			t.Fatal(err)
		}
		expectWC(t, a.cq, verbs.WCSuccess, verbs.WCRDMARead)
		if got := string(a.buf[30000 : 30000+26]); got != "read me from the responder" {
			t.Errorf("RDMA READ got %q", got)
		}
	})
	t.Run("atomics", func(t *testing.T) {
		binary.LittleEndian.PutUint64(b.buf[40000:], 10)
		if err := a.qp.PostSend(&verbs.SendWR{ID: 11, Opcode: verbs.WRAtomicFetchAdd, Flags: verbs.SendSignaled,
			SGL: sge(a, 40000, 8), RemoteAddr: b.mr.Addr() + 40000, RKey: b.mr.RKey(), CompareAdd: 5}); err != nil {
			t.Fatal(err)
		}
		expectWC(t, a.cq, verbs.WCSuccess, verbs.WCFetchAdd)
		if old, now := binary.LittleEndian.Uint64(a.buf[40000:]), binary.LittleEndian.Uint64(b.buf[40000:]); old != 10 || now != 15 {
			t.Errorf("FETCH_ADD: original %d (want 10), now %d (want 15)", old, now)
		}
		if err := a.qp.PostSend(&verbs.SendWR{ID: 12, Opcode: verbs.WRAtomicCmpSwp, Flags: verbs.SendSignaled,
			SGL: sge(a, 40008, 8), RemoteAddr: b.mr.Addr() + 40000, RKey: b.mr.RKey(), CompareAdd: 15, Swap: 99}); err != nil {
			t.Fatal(err)
		}
		expectWC(t, a.cq, verbs.WCSuccess, verbs.WCCompSwap)
		if old, now := binary.LittleEndian.Uint64(a.buf[40008:]), binary.LittleEndian.Uint64(b.buf[40000:]); old != 15 || now != 99 {
			t.Errorf("CMP_SWP: original %d (want 15), now %d (want 99)", old, now)
		}
	})
}

// TestBufferClosedWhileRegistered: a buffer closed while an MR uses it
// stays mapped for the MR (its inline data is gathered from it here) and
// goes when the MR does.
func TestBufferClosedWhileRegistered(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{})
	a, b := newEnd(t, open(t, d, 0), verbs.QPTypeRC, 4096), newEnd(t, open(t, d, 0), verbs.QPTypeRC, 4096)
	connect(t, a, b, nil)
	buf, err := a.dev.AllocBuffer(4096)
	if err != nil {
		t.Fatal(err)
	}
	copy(buf.Bytes(), "still mapped")
	mr, err := a.dev.RegMR(a.pd, buf.Bytes(), allAccess)
	if err != nil {
		t.Fatal(err)
	}
	if err := buf.Close(); err != nil {
		t.Fatal(err)
	}
	if buf.Bytes() != nil {
		t.Error("Bytes after Close is not nil")
	}
	if _, err := a.dev.RegMR(a.pd, make([]byte, 1), allAccess); err == nil {
		t.Error("registering more after Close succeeded")
	}
	if err := b.qp.PostRecv(&verbs.RecvWR{ID: 1, SGL: sge(b, 0, 64)}); err != nil {
		t.Fatal(err)
	}
	if err := a.qp.PostSend(&verbs.SendWR{ID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled | verbs.SendInline,
		SGL: []verbs.SGE{{Addr: mr.Addr(), Length: 12, LKey: mr.LKey()}}}); err != nil {
		t.Fatal(err)
	}
	expectWC(t, a.cq, verbs.WCSuccess, verbs.WCSend)
	expectWC(t, b.cq, verbs.WCSuccess, verbs.WCRecv)
	if got := string(b.buf[:12]); got != "still mapped" {
		t.Errorf("received %q", got)
	}
	if err := mr.Dereg(); err != nil {
		t.Fatal(err)
	}
}
