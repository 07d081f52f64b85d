package roce

import (
	"bytes"
	"testing"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce/wire"
	"github.com/rnic/rnic/transport"
)

func ucOpts() qpOpts {
	o := defaultOpts()
	o.qpType = verbs.QPTypeUC
	o.access = memory.RemoteWrite
	return o
}

// UC: SEND and WRITE (with immediate) arrive; nothing is acknowledged; the
// requester completes at send time.
func TestUCTraffic(t *testing.T) {
	h := newHarness(t, ucOpts())
	a, b := h.a, h.b
	fill(a.buf[:5000], 4)
	b.recv(1, 0x10000, 8192)
	b.recv(2, 0x20000, 64)
	a.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRSend, SGL: []verbs.SGE{a.sge(0, 5000)}})
	a.post(t, verbs.SendWR{ID: 2, Opcode: verbs.WRRDMAWriteWithImm, Imm: 7, SGL: []verbs.SGE{a.sge(0, 3000)}, RemoteAddr: b.va(0x30000), RKey: b.mr.RKey()})
	h.run()
	wantWC(t, a.scq.take(), verbs.WC{WRID: 1, Opcode: verbs.WCSend}, verbs.WC{WRID: 2, Opcode: verbs.WCRDMAWrite})
	wantWC(t, b.rcq.take(), verbs.WC{WRID: 1, Opcode: verbs.WCRecv, ByteLen: 5000}, verbs.WC{WRID: 2, Opcode: verbs.WCRecvRDMAWithImm, ByteLen: 3000})
	if !bytes.Equal(b.buf[0x10000:0x10000+5000], a.buf[:5000]) || !bytes.Equal(b.buf[0x30000:0x30000+3000], a.buf[:3000]) {
		t.Fatal("data differs")
	}
	if b.stack.ctr.Get(SentPkts) != 0 {
		t.Fatal("a UC responder sent packets")
	}
	rd := verbs.SendWR{ID: 3, Opcode: verbs.WRRDMARead, SGL: []verbs.SGE{a.sge(0, 8)}, RemoteAddr: b.va(0), RKey: b.mr.RKey()}
	if err := a.qp.PostSend(&rd); err == nil {
		t.Fatal("UC accepted an RDMA READ")
	}
}

// UC: a lost middle packet drops the rest of the message silently; the
// receive WQE is kept and the next message lands in it (IBTA §9.9.3.2).
func TestUCLossDropsMessage(t *testing.T) {
	o := ucOpts()
	o.faults.Script = dropWhere(transport.AtoB, 1, func(op wire.Opcode, _ uint32) bool { return op == wire.UCSendMiddle })
	h := newHarness(t, o)
	a, b := h.a, h.b
	b.recv(1, 0, 8192)
	fill(a.buf[:4000], 1)
	a.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRSend, SGL: []verbs.SGE{a.sge(0, 4000)}})
	a.post(t, verbs.SendWR{ID: 2, Opcode: verbs.WRSend, SGL: []verbs.SGE{a.sge(100, 500)}})
	h.run()
	wantWC(t, a.scq.take(), verbs.WC{WRID: 1, Opcode: verbs.WCSend}, verbs.WC{WRID: 2, Opcode: verbs.WCSend})
	got := b.rcq.take()
	wantWC(t, got, verbs.WC{WRID: 1, Opcode: verbs.WCRecv, ByteLen: 500})
	if !bytes.Equal(b.buf[:500], a.buf[100:600]) {
		t.Fatal("second message data differs")
	}
	if b.stack.ctr.Get(UCDroppedMsgs) != 1 || b.qp.State() != verbs.QPSRTS {
		t.Fatalf("uc_dropped_msgs=%d state=%v", b.stack.ctr.Get(UCDroppedMsgs), b.qp.State())
	}
}

// UC: a bad rkey is dropped silently at the responder (class D), while the
// requester reports success, as the spec says it cannot know.
func TestUCBadRKeyDropped(t *testing.T) {
	h := newHarness(t, ucOpts())
	a, b := h.a, h.b
	a.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRRDMAWrite, SGL: []verbs.SGE{a.sge(0, 10)}, RemoteAddr: b.va(0), RKey: b.mr.RKey() ^ 0x55})
	h.run()
	wantWC(t, a.scq.take(), verbs.WC{WRID: 1, Opcode: verbs.WCRDMAWrite})
	if b.stack.ctr.Get(BadRKey) != 1 || b.qp.State() != verbs.QPSRTS {
		t.Fatal("bad rkey not counted, or the UC QP left RTS")
	}
	if peers, _ := b.mem.KeyFailures(); len(peers) != 1 || peers[0].Peer != (memory.Peer{Addr: a.addr, ID: a.qp.Cfg.QPN}) {
		t.Fatalf("key failures %+v, want one of A's QP", peers)
	}
}

// UC: a SEND longer than the receive buffer is dropped silently and
// counted (IBTA §9.9.3.2, class D; rxe resets the WQE for reuse); the QP
// stays in RTS and the next message lands in the same receive WQE. With an
// SRQ the WQE it took stays with the QP for its next message.
func TestUCTooLongDropped(t *testing.T) {
	for _, srq := range []bool{false, true} {
		o := ucOpts()
		o.useSRQ = srq
		h := newHarness(t, o)
		a, b := h.a, h.b
		b.recv(9, 0, 100)
		a.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRSend, SGL: []verbs.SGE{a.sge(0, 3000)}})
		h.run()
		if got := b.stack.ctr.Get(UCDroppedMsgs); got != 1 {
			t.Fatalf("srq=%v: uc_dropped_msgs %d, want 1", srq, got)
		}
		if wcs := b.rcq.take(); len(wcs) != 0 || b.qp.State() != verbs.QPSRTS {
			t.Fatalf("srq=%v: completions %v, state %v; want none and RTS", srq, wcs, b.qp.State())
		}
		copy(a.buf, "short")
		a.post(t, verbs.SendWR{ID: 2, Opcode: verbs.WRSend, SGL: []verbs.SGE{a.sge(0, 5)}})
		h.run()
		wantWC(t, b.rcq.take(), verbs.WC{WRID: 9, Opcode: verbs.WCRecv, ByteLen: 5})
		if string(b.buf[:5]) != "short" {
			t.Fatalf("srq=%v: payload %q", srq, b.buf[:5])
		}
	}
}

func udOpts() qpOpts {
	o := defaultOpts()
	o.qpType, o.qkey = verbs.QPTypeUD, 0x11111111
	return o
}

// UD: the receive buffer starts with the 40-byte GRH area (20 zero bytes
// and the IPv4 header), byte_len counts it, the source QP comes from the
// DETH, and the SL says which IP header it is (as mlx5 reports it).
func TestUDSendGRH(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		o := udOpts()
		o.v6 = v6
		h := newHarness(t, o)
		a, b := h.a, h.b
		copy(a.buf, "hello, datagram")
		b.recv(1, 0, 1024)
		a.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRSendWithImm, Imm: 99, SGL: []verbs.SGE{a.sge(0, 15)}, AH: b.ah(), RemoteQPN: b.qp.QPN(), RemoteQKey: 0x11111111})
		h.run()
		wantWC(t, a.scq.take(), verbs.WC{WRID: 1, Opcode: verbs.WCSend})
		rc := b.rcq.take()
		wantWC(t, rc, verbs.WC{WRID: 1, Opcode: verbs.WCRecv, ByteLen: 40 + 15})
		if rc[0].SrcQP != a.qp.QPN() || rc[0].Imm != 99 || rc[0].Flags&verbs.WCFlagGRH == 0 {
			t.Fatalf("completion %+v", rc[0])
		}
		if string(b.buf[40:55]) != "hello, datagram" {
			t.Fatalf("payload %q", b.buf[40:55])
		}
		wantSL := verbs.WCSLRoCEIPv4
		if v6 {
			wantSL = verbs.WCSLRoCEIPv6
		}
		if rc[0].SL != wantSL {
			t.Fatalf("v6=%v: SL %d, want %d (the RoCE L3 header type)", v6, rc[0].SL, wantSL)
		}
		if v6 {
			if b.buf[0]>>4 != 6 || !bytes.Equal(b.buf[8:24], a.addr.AsSlice()) {
				t.Fatalf("GRH area is not the IPv6 header: %x", b.buf[:40])
			}
		} else {
			if !bytes.Equal(b.buf[:20], make([]byte, 20)) || b.buf[20] != 0x45 || !bytes.Equal(b.buf[32:36], a.addr.AsSlice()) {
				t.Fatalf("GRH area is not 20 zero bytes + IPv4 header: %x", b.buf[:40])
			}
		}
	}
}

// UD Q_Keys: a mismatch is dropped and counted; a controlled Q_Key in the
// WR (high bit set) means "use the QP's own" (IBTA §10.2.4).
func TestUDQKey(t *testing.T) {
	h := newHarness(t, udOpts())
	a, b := h.a, h.b
	b.recv(1, 0, 1024)
	a.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRSend, SGL: []verbs.SGE{a.sge(0, 8)}, AH: b.ah(), RemoteQPN: b.qp.QPN(), RemoteQKey: 0x22222222})
	h.run()
	if b.stack.ctr.Get(QKeyViolation) != 1 || len(b.rcq.take()) != 0 {
		t.Fatal("a wrong Q_Key was delivered")
	}
	a.post(t, verbs.SendWR{ID: 2, Opcode: verbs.WRSend, SGL: []verbs.SGE{a.sge(0, 8)}, AH: b.ah(), RemoteQPN: b.qp.QPN(), RemoteQKey: 0x80000000})
	h.run()
	wantWC(t, b.rcq.take(), verbs.WC{WRID: 1, Opcode: verbs.WCRecv, ByteLen: 48})
}

// UD: a message longer than the MTU fails with LOC_LEN_ERR (rxe completes it
// "successfully" without sending); the QP goes to SQE and recovers with
// SQE→RTS. No receive WQE: dropped and counted.
func TestUDErrors(t *testing.T) {
	h := newHarness(t, udOpts())
	a, b := h.a, h.b
	a.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRSend, SGL: []verbs.SGE{a.sge(0, 1025)}, AH: b.ah(), RemoteQPN: b.qp.QPN(), RemoteQKey: 0x11111111})
	a.post(t, verbs.SendWR{ID: 2, Opcode: verbs.WRSend, SGL: []verbs.SGE{a.sge(0, 8)}, AH: b.ah(), RemoteQPN: b.qp.QPN(), RemoteQKey: 0x11111111})
	h.run()
	wantWC(t, a.scq.take(), verbs.WC{WRID: 1, Status: verbs.WCLocLenErr}, verbs.WC{WRID: 2, Status: verbs.WCWRFlushErr})
	if a.qp.State() != verbs.QPSSQE || a.stack.ctr.Get(SentPkts) != 0 {
		t.Fatalf("state %v, %d packets sent", a.qp.State(), a.stack.ctr.Get(SentPkts))
	}
	if err := a.qp.Modify(verbs.QPSSQE, &verbs.QPAttr{State: verbs.QPSRTS}, verbs.AttrState); err != nil {
		t.Fatal(err)
	}
	a.post(t, verbs.SendWR{ID: 3, Opcode: verbs.WRSend, SGL: []verbs.SGE{a.sge(0, 8)}, AH: b.ah(), RemoteQPN: b.qp.QPN(), RemoteQKey: 0x11111111})
	h.run()
	wantWC(t, a.scq.take(), verbs.WC{WRID: 3, Opcode: verbs.WCSend})
	if b.stack.ctr.Get(RcvNoBuf) != 1 {
		t.Fatal("a message without a receive WQE was not counted")
	}
}

// UD: a datagram too long for the posted receive buffer (after the GRH
// area), or longer than the receiver's MTU, is dropped silently and
// counted; the receive WQE stays posted and the QP stays in RTS, so the
// next datagram that fits is delivered into that same WQE (IBTA class D;
// rxe f67ac0061c76). Before, the remote sender completed the WQE with
// LOC_LEN_ERR and moved the QP to ERR. With and without an SRQ.
func TestUDTooLongDropped(t *testing.T) {
	for _, srq := range []bool{false, true} {
		o := udOpts()
		o.useSRQ = srq
		h := newHarness(t, o)
		a, b := h.a, h.b
		send := func(id uint64, n int) {
			a.post(t, verbs.SendWR{ID: id, Opcode: verbs.WRSend, SGL: []verbs.SGE{a.sge(0, n)}, AH: b.ah(), RemoteQPN: b.qp.QPN(), RemoteQKey: 0x11111111})
			h.run()
			wantWC(t, a.scq.take(), verbs.WC{WRID: id, Opcode: verbs.WCSend})
		}
		b.recv(9, 0, 40+4)
		send(1, 8) // 8 bytes after a 40-byte GRH area do not fit 44
		// The sender's MTU is raised past the receiver's, as a peer with a
		// larger path MTU (or a hostile one) would send.
		a.qp.mtu = 4096
		send(2, 2000)
		if got := b.stack.ctr.Get(UDTooLong); got != 2 {
			t.Fatalf("srq=%v: ud_too_long %d, want 2", srq, got)
		}
		if wcs := b.rcq.take(); len(wcs) != 0 || b.qp.State() != verbs.QPSRTS || b.rq.Len() != 1 {
			t.Fatalf("srq=%v: completions %v, state %v, %d receive WQEs posted: want none, RTS, 1", srq, wcs, b.qp.State(), b.rq.Len())
		}
		copy(a.buf, "fits")
		send(3, 4)
		wantWC(t, b.rcq.take(), verbs.WC{WRID: 9, Opcode: verbs.WCRecv, ByteLen: 44})
		if string(b.buf[40:44]) != "fits" {
			t.Fatalf("srq=%v: payload %q", srq, b.buf[40:44])
		}
	}
}
