package iwarp

import (
	"bytes"
	"errors"
	"testing"

	"github.com/rnic/rnic/iwarp/wire"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/transport"
)

// untaggedOn returns the queue-0 segments (Sends and Immediate Data) one
// side put on the wire, in order.
func (h *harness) untaggedOn(dir transport.Direction, f wire.Framing) []wire.Segment {
	_, segs := fpdus(h.t, h.wireBuf[dir], f)
	var out []wire.Segment
	for _, s := range segs {
		var seg wire.Segment
		if seg.Decode(s) != nil {
			h.t.Fatalf("undecodable segment %x", s)
		}
		if !seg.Info().Tagged && seg.Info().QN == wire.QNSend {
			out = append(out, seg)
		}
	}
	return out
}

// TestImmediateData: RDMA_WRITE_WITH_IMM is an RDMA Write followed by an
// Immediate Data message, SEND_WITH_IMM a lone Immediate Data message (SE
// when solicited); each consumes one receive WQE at B, places nothing in
// it, and completes it with the imm_data, interleaved with ordinary Sends
// on the same MSN sequence.
func TestImmediateData(t *testing.T) {
	for _, chop := range []float64{0, 0.5} {
		o := defaultOpts()
		o.sim.Chop, o.sim.Seed = chop, 11
		o.trace = true
		h := newHarness(t, o)
		a, b := h.a, h.b
		const n = 7000 // several FPDUs
		fill(a.buf[:n], 4)
		fill(b.buf[500000:500400], 0xEE) // receive buffers: nothing lands in them
		sentinel := append([]byte(nil), b.buf[500000:500400]...)
		b.recv(1, 500000, 100)
		b.recv(2, 500100, 100)
		b.recv(3, 500200, 100)
		b.recv(4, 500300, 100)
		b.recv(5, 0, 100) // the Send's
		a.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRRDMAWriteWithImm, SGL: []verbs.SGE{a.sge(0, n)},
			RemoteAddr: b.va(100000), RKey: b.mr.RKey(), Imm: 0xDEADBEEF})
		a.post(t, verbs.SendWR{ID: 2, Opcode: verbs.WRSendWithImm, Flags: verbs.SendSignaled | verbs.SendSolicited, Imm: 0x1234})
		// A zero-length RDMA_WRITE_WITH_IMM reports 0, not the previous
		// Write's length.
		a.post(t, verbs.SendWR{ID: 3, Opcode: verbs.WRRDMAWriteWithImm, RemoteAddr: b.va(0), RKey: b.mr.RKey(), Imm: 7})
		a.post(t, verbs.SendWR{ID: 4, Opcode: verbs.WRSendWithImm, Flags: verbs.SendSignaled | verbs.SendInline, Imm: 0xFFFFFFFF})
		copy(a.buf[n:], "after")
		a.post(t, verbs.SendWR{ID: 5, Opcode: verbs.WRSend, SGL: []verbs.SGE{a.sge(n, 5)}})
		h.run()
		wantWC(t, a.scq.take(),
			verbs.WC{WRID: 1, Opcode: verbs.WCRDMAWrite}, verbs.WC{WRID: 2, Opcode: verbs.WCSend},
			verbs.WC{WRID: 3, Opcode: verbs.WCRDMAWrite}, verbs.WC{WRID: 4, Opcode: verbs.WCSend},
			verbs.WC{WRID: 5, Opcode: verbs.WCSend})
		rw := b.rcq.take()
		want := []verbs.WC{
			{WRID: 1, Opcode: verbs.WCRecvRDMAWithImm, ByteLen: n, Imm: 0xDEADBEEF, Flags: verbs.WCFlagWithImm},
			{WRID: 2, Opcode: verbs.WCRecv, Imm: 0x1234, Flags: verbs.WCFlagWithImm},
			{WRID: 3, Opcode: verbs.WCRecvRDMAWithImm, Imm: 7, Flags: verbs.WCFlagWithImm},
			{WRID: 4, Opcode: verbs.WCRecv, Imm: 0xFFFFFFFF, Flags: verbs.WCFlagWithImm},
			{WRID: 5, Opcode: verbs.WCRecv, ByteLen: 5},
		}
		if len(rw) != len(want) {
			h.dumpTrace()
			t.Fatalf("receive completions %+v", rw)
		}
		for i := range want {
			w := want[i]
			w.QPN = b.qp.QPN()
			if rw[i] != w {
				t.Fatalf("receive completion %d: %+v, want %+v", i, rw[i], w)
			}
		}
		if b.rcq.solicited != 1 {
			t.Fatalf("solicited %d", b.rcq.solicited)
		}
		if !bytes.Equal(b.buf[100000:100000+n], a.buf[:n]) || string(b.buf[:5]) != "after" {
			t.Fatal("data mismatch")
		}
		if !bytes.Equal(b.buf[500000:500400], sentinel) {
			t.Fatal("Immediate Data placed bytes in a receive buffer")
		}
		if got := b.stack.ctr.Get(ImmediateRcvd); got != 4 {
			t.Fatalf("immediate_rcvd %d", got)
		}
		// The wire: queue 0 carries Imm, ImmSE, Imm, Imm, Send with MSNs 1-5
		// (the RTR was a Write); imm_data in the low 4 octets, the
		// after-Write flag in the high 4.
		segs := h.untaggedOn(transport.AtoB, a.qp.txFraming)
		wantOps := []wire.Opcode{wire.OpImmediate, wire.OpImmediateSE, wire.OpImmediate, wire.OpImmediate, wire.OpSend}
		wantData := []uint64{1<<32 | 0xDEADBEEF, 0x1234, 1<<32 | 7, 0xFFFFFFFF}
		if len(segs) != len(wantOps) {
			t.Fatalf("%d queue-0 segments from A", len(segs))
		}
		for i, s := range segs {
			if s.Opcode() != wantOps[i] || s.DDP().MSN() != uint32(i+1) || s.DDP().MO() != 0 || !s.DDP().Last() {
				t.Fatalf("segment %d: %v MSN %d MO %d", i, s.Opcode(), s.DDP().MSN(), s.DDP().MO())
			}
			if i < len(wantData) && s.Immediate().Data() != wantData[i] {
				t.Fatalf("segment %d: Immediate Data %#x, want %#x", i, s.Immediate().Data(), wantData[i])
			}
		}
		h.wantState(a, verbs.QPSRTS)
		h.wantState(b, verbs.QPSRTS)
	}
}

// TestImmediateFromPeerWithoutFlags: Immediate Data whose high 4 octets
// are not rnic's flags (a peer mapping imm_data differently) completes as
// a receive with the low 4 octets.
func TestImmediateFromPeerWithoutFlags(t *testing.T) {
	h := newHarness(t, defaultOpts())
	b := h.b
	b.recv(9, 0, 0)
	b.inject(b.fpdu(&wire.Headers{DDP: wire.DDPFields{Opcode: wire.OpImmediate, Last: true, QN: wire.QNSend, MSN: 1},
		Immediate: 0xAB00000000000000 | 0x55}, nil))
	h.run()
	rw := b.rcq.take()
	wantWC(t, rw, verbs.WC{WRID: 9, Opcode: verbs.WCRecv})
	if rw[0].Imm != 0x55 || rw[0].Flags != verbs.WCFlagWithImm || rw[0].ByteLen != 0 {
		t.Fatalf("completion %+v", rw[0])
	}
	h.wantState(b, verbs.QPSRTS)
}

// TestNoImmediate: a stack without RFC 7306 Immediate Data refuses the
// WRs and answers the messages with an unexpected-opcode Terminate.
func TestNoImmediate(t *testing.T) {
	o := defaultOpts()
	o.a.NoImmediate, o.b.NoImmediate = true, true
	h := newHarness(t, o)
	a, b := h.a, h.b
	for _, op := range []verbs.WROpcode{verbs.WRSendWithImm, verbs.WRRDMAWriteWithImm} {
		if err := a.qp.PostSend(&verbs.SendWR{Opcode: op}); !errors.Is(err, ErrUnsupported) {
			t.Fatalf("%v: %v", op, err)
		}
	}
	b.recv(1, 0, 100)
	b.inject(b.fpdu(&wire.Headers{DDP: wire.DDPFields{Opcode: wire.OpImmediate, Last: true, QN: wire.QNSend, MSN: 1}}, nil))
	h.run()
	tb := h.terminateOn(transport.BtoA, b.qp.txFraming)
	if tb == nil || tb.Code() != wire.TermRDMAPUnexpectedOpcode {
		t.Fatalf("Terminate %x", []byte(tb))
	}
	h.wantState(a, verbs.QPSErr)
	h.wantState(b, verbs.QPSErr)
}
