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
