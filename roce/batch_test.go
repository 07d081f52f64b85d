package roce

import (
	"bytes"
	"testing"

	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce/wire"
	"github.com/rnic/rnic/transport"
)

// batchLink wraps a simulated endpoint and offers SendBatch, recording the
// size of every batch.
type batchLink struct {
	transport.Endpoint
	sizes []int
}

func (l *batchLink) SendBatch(frames [][]byte) error {
	l.sizes = append(l.sizes, len(frames))
	for _, f := range frames {
		if err := l.Endpoint.Send(f); err != nil {
			return err
		}
	}
	return nil
}

// TestBurstsGoOutTogether: on a link that takes batches, a multi-packet
// WRITE leaves in one burst (one sendmmsg on a kernel socket), so do a
// READ's responses; every frame is whole and in PSN order.
func TestBurstsGoOutTogether(t *testing.T) {
	h := newHarness(t, defaultOpts())
	a, b := h.a, h.b
	la := &batchLink{Endpoint: a.ep}
	lb := &batchLink{Endpoint: b.ep}
	a.stack.sender, b.stack.sender = la, lb
	var psns []uint32
	fill(a.buf[:10240], 3)
	a.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRRDMAWrite, SGL: []verbs.SGE{a.sge(0, 10240)}, RemoteAddr: b.va(0x1000), RKey: b.mr.RKey()})
	if len(la.sizes) != 1 || la.sizes[0] != 10 {
		t.Fatalf("WRITE of 10 packets went out in batches %v, want [10]", la.sizes)
	}
	fill(b.buf[0x8000:0x8000+5000], 9)
	a.post(t, verbs.SendWR{ID: 2, Opcode: verbs.WRRDMARead, SGL: []verbs.SGE{a.sge(0x20000, 5000)}, RemoteAddr: b.va(0x8000), RKey: b.mr.RKey()})
	a.ep.SetReceiver(func(f []byte) {
		var fr wire.Frame
		if err := fr.Decode(f, 0); err != nil || !fr.VerifyICRC() {
			t.Fatalf("a batched frame does not verify: %v", err)
		}
		if fr.Packet.Info().Kind == wire.KindReadResponse {
			psns = append(psns, fr.Packet.BTH().PSN())
		}
		a.stack.Input(f)
	})
	h.run()
	wantWC(t, a.scq.take(), verbs.WC{WRID: 1, Opcode: verbs.WCRDMAWrite}, verbs.WC{WRID: 2, Opcode: verbs.WCRDMARead, ByteLen: 5000})
	if !bytes.Equal(b.buf[0x1000:0x1000+10240], a.buf[:10240]) || !bytes.Equal(a.buf[0x20000:0x20000+5000], b.buf[0x8000:0x8000+5000]) {
		t.Fatal("data differs")
	}
	five := false
	for _, n := range lb.sizes {
		five = five || n == 5
	}
	if !five {
		t.Fatalf("the READ's 5 responses did not leave in one burst: %v", lb.sizes)
	}
	for i := 1; i < len(psns); i++ {
		if psns[i] != psns[i-1]+1 {
			t.Fatalf("responses out of order: %v", psns)
		}
	}
}

// TestPostCarriesOwedACK: a request posted on a QP whose responder owes an
// ACK (the receive path has not flushed it yet) leaves in one burst with
// that ACK, and the receive path's flush then has nothing left to send.
func TestPostCarriesOwedACK(t *testing.T) {
	h := newHarness(t, defaultOpts())
	a, b := h.a, h.b
	la := &batchLink{Endpoint: a.ep}
	lb := &batchLink{Endpoint: b.ep}
	a.stack.sender, b.stack.sender = la, lb
	// b takes frames as the receive path does before its flush, which
	// the test calls itself.
	b.stack.cfg.DeferAcks = false
	b.ep.SetReceiver(func(f []byte) { b.stack.input(f) })
	var acks int
	a.ep.SetReceiver(func(f []byte) {
		var fr wire.Frame
		if err := fr.Decode(f, 0); err == nil && fr.Packet.Info().Kind == wire.KindAck {
			acks++
		}
		a.stack.Input(f)
	})
	fill(a.buf[:8], 5)
	a.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRRDMAWrite, SGL: []verbs.SGE{a.sge(0, 8)}, RemoteAddr: b.va(0x100), RKey: b.mr.RKey()})
	// Until the WRITE has landed: later, a's retransmission would fetch
	// a duplicate's ACK.
	h.clk.Run(b.stack.acksOwed)
	if len(lb.sizes) != 0 || !b.stack.acksOwed() {
		t.Fatalf("b sent %v before its flush, owes an ACK: %v", lb.sizes, b.stack.acksOwed())
	}
	fill(b.buf[0x200:0x208], 6)
	b.post(t, verbs.SendWR{ID: 2, Opcode: verbs.WRRDMAWrite, SGL: []verbs.SGE{b.sge(0x200, 8)}, RemoteAddr: a.va(0x300), RKey: a.mr.RKey()})
	if len(lb.sizes) != 1 || lb.sizes[0] != 2 {
		t.Fatalf("b's WRITE and owed ACK went out in batches %v, want [2]", lb.sizes)
	}
	b.stack.flushAcks()
	h.run()
	if len(lb.sizes) != 1 || acks != 1 {
		t.Fatalf("after the flush: b's batches %v, ACKs at a %d; want [2] and 1", lb.sizes, acks)
	}
	wantWC(t, a.scq.take(), verbs.WC{WRID: 1, Opcode: verbs.WCRDMAWrite})
	if !bytes.Equal(b.buf[0x100:0x108], a.buf[:8]) || !bytes.Equal(a.buf[0x300:0x308], b.buf[0x200:0x208]) {
		t.Fatal("data differs")
	}
}

// TestErrorSendsOwedACK: an application that moves its QP to ERR while
// the responder owes an ACK (for a message it may already have consumed)
// sends that ACK first, so the peer's WRITE completes instead of retrying.
func TestErrorSendsOwedACK(t *testing.T) {
	h := newHarness(t, defaultOpts())
	a, b := h.a, h.b
	b.stack.cfg.DeferAcks = false
	b.ep.SetReceiver(func(f []byte) { b.stack.input(f) })
	a.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRRDMAWrite, SGL: []verbs.SGE{a.sge(0, 8)}, RemoteAddr: b.va(0x100), RKey: b.mr.RKey()})
	h.clk.Run(b.stack.acksOwed)
	if err := b.qp.Modify(verbs.QPSRTS, &verbs.QPAttr{State: verbs.QPSErr}, verbs.AttrState); err != nil {
		t.Fatal(err)
	}
	h.clk.Run(func() bool { return len(a.scq.wcs) > 0 })
	if got := a.stack.Counters().Get(RetransmittedPkts); got != 0 {
		t.Errorf("a retransmitted %d times", got)
	}
	wantWC(t, a.scq.take(), verbs.WC{WRID: 1, Opcode: verbs.WCRDMAWrite})
}
