package roce

import (
	"bytes"
	"testing"

	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce/wire"
	"github.com/rnic/rnic/transport"
)

// A responder may answer a retried READ (one that asks for the rest of a
// READ from a middle PSN) as a new request, starting with READ Response
// First, where rxe's and rnic's responders resume with Middle; the spec
// text leaves it open, so the requester takes either. Here the first Middle of a 3-packet READ is lost,
// the requester asks again from it, and its replay is rewritten from
// Middle into First. Before, the requester completed the READ with
// BAD_RESP_ERR.
func TestReadRetryAnsweredAsNewRequest(t *testing.T) {
	const mid = 1001 // the READ's PSNs are 1000..1002
	seen := 0
	script := func(d transport.Direction, _ int, frame []byte) transport.Verdict {
		var f wire.Frame
		if d != transport.BtoA || f.Decode(frame, 0) != nil || f.Packet.Opcode() != wire.RCReadResponseMiddle ||
			f.Packet.BTH().PSN() != mid {
			return transport.Pass()
		}
		if seen++; seen == 1 {
			return transport.Drop()
		}
		e, h := f.Encap(), f.Packet.Headers()
		h.BTH.Opcode = wire.RCReadResponseFirst
		h.AETH = wire.AETHFields{Syndrome: wire.ACKSyndrome(wire.CreditsUnlimited), MSN: 1}
		return transport.Replace(wire.AppendFrame(nil, &e, &h, f.Packet.Payload()))
	}
	h := newHarness(t, withScript(script))
	a, b := h.a, h.b
	fill(b.buf[:3072], 7)
	a.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRRDMARead, SGL: []verbs.SGE{a.sge(0, 3072)}, RemoteAddr: b.va(0), RKey: b.mr.RKey()})
	h.run()
	wantWC(t, a.scq.take(), verbs.WC{WRID: 1, Opcode: verbs.WCRDMARead, ByteLen: 3072})
	if seen != 2 {
		t.Fatalf("the Middle at psn %d passed %d times, want 2 (lost, then replayed as First)", mid, seen)
	}
	if !bytes.Equal(a.buf[:3072], b.buf[:3072]) {
		t.Fatal("data differs")
	}
}
