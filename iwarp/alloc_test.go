package iwarp

import (
	"testing"

	"github.com/rnic/rnic/iwarp/wire"
	"github.com/rnic/rnic/nic/verbs"
)

// inject feeds stream bytes to a node's QP as its stream callback would.
func (n *node) inject(p []byte) {
	n.qp.Mu.Lock()
	n.qp.input(p)
	n.qp.unlock()
}

// fpdu frames one segment for n's receive direction.
func (n *node) fpdu(h *wire.Headers, payload []byte) []byte {
	return wire.AppendFPDU(nil, n.qp.rxFraming, 0, wire.AppendHeaders(nil, h), payload)
}

// TestReceiveAllocs: placing a Write and reassembling a Send allocate
// nothing in the steady state (nic/README.md, principle 2).
func TestReceiveAllocs(t *testing.T) {
	h := newHarness(t, defaultOpts())
	b := h.b
	payload := make([]byte, 1400)
	w := b.fpdu(&wire.Headers{DDP: wire.DDPFields{Opcode: wire.OpWrite, Last: true, STag: b.mr.RKey(), TO: b.va(4096)}}, payload)
	if a := testing.AllocsPerRun(200, func() { b.inject(w) }); a != 0 {
		t.Fatalf("Write placement: %v allocations", a)
	}
	const runs = 200
	sends := make([][]byte, 0, runs+1)
	for i := range runs + 1 {
		sends = append(sends, b.fpdu(&wire.Headers{DDP: wire.DDPFields{Opcode: wire.OpSend, Last: true, QN: wire.QNSend, MSN: uint32(i + 1)}}, payload))
		b.rq.q = append(b.rq.q, verbs.RecvWR{ID: uint64(i), SGL: []verbs.SGE{b.sge(0, 2000)}})
	}
	b.rcq.wcs = make([]verbs.WC, 0, runs+1)
	i := 0
	if a := testing.AllocsPerRun(runs, func() { b.inject(sends[i]); i++ }); a != 0 {
		t.Fatalf("Send reassembly: %v allocations", a)
	}
	if len(b.rcq.wcs) != runs+1 || b.qp.State() != verbs.QPSRTS {
		t.Fatalf("%d receive completions, state %v", len(b.rcq.wcs), b.qp.State())
	}
}

// FuzzReceive feeds arbitrary bytes to a connected QP as its peer's
// stream: whatever arrives, the engine must not panic, and it either keeps
// going or ends the connection with a Terminate.
func FuzzReceive(f *testing.F) {
	h := newHarness(f, defaultOpts())
	b := h.b
	f.Add(b.fpdu(&wire.Headers{DDP: wire.DDPFields{Opcode: wire.OpWrite, Last: true, STag: b.mr.RKey(), TO: b.va(0)}}, []byte("data")))
	f.Add(b.fpdu(&wire.Headers{DDP: wire.DDPFields{Opcode: wire.OpSend, Last: true, QN: wire.QNSend, MSN: 1}}, []byte("data")))
	f.Add(b.fpdu(&wire.Headers{DDP: wire.DDPFields{Opcode: wire.OpReadRequest, Last: true, QN: wire.QNReadRequest, MSN: 1},
		ReadRequest: wire.ReadRequestFields{SinkSTag: 5, Size: 100, SourceSTag: b.mr.RKey(), SourceTO: b.va(0)}}, nil))
	f.Add(b.fpdu(&wire.Headers{DDP: wire.DDPFields{Opcode: wire.OpAtomicRequest, Last: true, QN: wire.QNReadRequest, MSN: 1},
		AtomicRequest: wire.AtomicRequestFields{Op: wire.AtomicSwap, STag: b.mr.RKey(), TO: b.va(8), AddSwapMask: 0xff}}, nil))
	f.Add(b.fpdu(&wire.Headers{DDP: wire.DDPFields{Opcode: wire.OpReadResponse, Last: true, STag: 1}}, nil))
	f.Add([]byte{0, 4, 0x41, 0x43, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		h := newHarness(t, defaultOpts())
		b := h.b
		b.recv(1, 0, 64)
		// Frame the fuzz bytes as one or more ULPDUs with a valid CRC, so
		// that they reach the decoder, and also feed them raw.
		for len(data) > 0 {
			n := min(len(data), 200)
			b.inject(wire.AppendFPDU(nil, b.qp.rxFraming, 0, nil, data[:n]))
			data = data[n:]
		}
		h.run()
		if st := b.qp.State(); st != verbs.QPSRTS && st != verbs.QPSErr {
			t.Fatalf("state %v", st)
		}
	})
}
