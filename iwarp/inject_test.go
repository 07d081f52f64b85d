package iwarp

import (
	"testing"

	"github.com/rnic/rnic/iwarp/wire"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/transport"
)

// TestInjectedErrors feeds B crafted FPDUs, as a faulty peer would send
// them, and checks B's Terminate on the wire.
func TestInjectedErrors(t *testing.T) {
	cases := []struct {
		name    string
		seg     func(b *node) []byte // the ULPDU
		code    wire.TermCode
		m, d, r bool
	}{
		{"send MSN out of range", func(b *node) []byte {
			return wire.AppendHeaders(nil, &wire.Headers{DDP: wire.DDPFields{Opcode: wire.OpSend, Last: true, QN: wire.QNSend, MSN: 5}})
		}, wire.TermDDPUntaggedMSNRange, true, true, false},
		{"send MO not zero", func(b *node) []byte {
			return wire.AppendHeaders(nil, &wire.Headers{DDP: wire.DDPFields{Opcode: wire.OpSend, Last: true, QN: wire.QNSend, MSN: 1, MO: 8}})
		}, wire.TermDDPUntaggedInvalidMO, true, true, false},
		{"invalid QN", func(b *node) []byte {
			return wire.AppendHeaders(nil, &wire.Headers{DDP: wire.DDPFields{Opcode: wire.OpSend, Last: true, QN: 5, MSN: 1}})
		}, wire.TermDDPUntaggedInvalidQN, true, true, false},
		{"DDP version", func(b *node) []byte {
			s := wire.AppendHeaders(nil, &wire.Headers{DDP: wire.DDPFields{Opcode: wire.OpSend, Last: true, QN: wire.QNSend, MSN: 1}})
			s[0] = s[0]&^3 | 2
			return s
		}, wire.TermDDPUntaggedVersion, false, false, false},
		{"RDMAP version", func(b *node) []byte {
			s := wire.AppendHeaders(nil, &wire.Headers{DDP: wire.DDPFields{Opcode: wire.OpSend, Last: true, QN: wire.QNSend, MSN: 1}})
			s[1] = s[1]&^0xC0 | 0x80
			return s
		}, wire.TermRDMAPVersion, false, false, false},
		{"reserved opcode", func(b *node) []byte {
			s := wire.AppendHeaders(nil, &wire.Headers{DDP: wire.DDPFields{Opcode: wire.OpSend, Last: true, QN: wire.QNSend, MSN: 1}})
			s[1] = s[1]&^0x0F | 13
			return s
		}, wire.TermRDMAPUnexpectedOpcode, false, false, false},
		{"read response without a READ", func(b *node) []byte {
			return wire.AppendSegment(nil, &wire.Headers{DDP: wire.DDPFields{Opcode: wire.OpReadResponse, Last: true, STag: b.mr.RKey(), TO: b.va(0)}}, []byte("x"))
		}, wire.TermRDMAPUnexpectedOpcode, false, false, false},
		{"immediate data without a receive buffer", func(b *node) []byte {
			return wire.AppendHeaders(nil, &wire.Headers{DDP: wire.DDPFields{Opcode: wire.OpImmediate, Last: true, QN: wire.QNSend, MSN: 1}})
		}, wire.TermDDPUntaggedNoBuffer, true, true, false},
		{"immediate data not last", func(b *node) []byte {
			return wire.AppendHeaders(nil, &wire.Headers{DDP: wire.DDPFields{Opcode: wire.OpImmediateSE, QN: wire.QNSend, MSN: 1}})
		}, wire.TermDDPUntaggedInvalidMO, true, true, false},
		{"immediate data MSN out of range", func(b *node) []byte {
			return wire.AppendHeaders(nil, &wire.Headers{DDP: wire.DDPFields{Opcode: wire.OpImmediate, Last: true, QN: wire.QNSend, MSN: 3}})
		}, wire.TermDDPUntaggedMSNRange, true, true, false},
		{"immediate data with a payload", func(b *node) []byte {
			return wire.AppendSegment(nil, &wire.Headers{DDP: wire.DDPFields{Opcode: wire.OpImmediate, Last: true, QN: wire.QNSend, MSN: 1}}, []byte("x"))
		}, wire.TermRDMAPOpUnspecified, true, true, true},
		{"read request MSN out of range", func(b *node) []byte {
			return wire.AppendHeaders(nil, &wire.Headers{DDP: wire.DDPFields{Opcode: wire.OpReadRequest, Last: true, QN: wire.QNReadRequest, MSN: 9},
				ReadRequest: wire.ReadRequestFields{Size: 8, SourceSTag: b.mr.RKey(), SourceTO: b.va(0)}})
		}, wire.TermDDPUntaggedMSNRange, true, true, false},
		{"truncated read request", func(b *node) []byte {
			s := wire.AppendHeaders(nil, &wire.Headers{DDP: wire.DDPFields{Opcode: wire.OpReadRequest, Last: true, QN: wire.QNReadRequest, MSN: 1}})
			return s[:len(s)-4]
		}, wire.TermRDMAPOpUnspecified, true, true, true},
		{"atomic response without an atomic", func(b *node) []byte {
			return wire.AppendHeaders(nil, &wire.Headers{DDP: wire.DDPFields{Opcode: wire.OpAtomicResponse, Last: true, QN: wire.QNAtomicResponse, MSN: 1}})
		}, wire.TermRDMAPUnexpectedOpcode, false, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := defaultOpts()
			o.trace = true
			h := newHarness(t, o)
			b := h.b
			b.inject(wire.AppendFPDU(nil, b.qp.rxFraming, 0, c.seg(b), nil))
			h.run()
			h.wantState(b, verbs.QPSErr)
			h.wantState(h.a, verbs.QPSErr)
			tb := h.terminateOn(transport.BtoA, b.qp.txFraming)
			if tb == nil {
				h.dumpTrace()
				t.Fatal("no Terminate")
			}
			if tb.Code() != c.code || tb.M() != c.m || tb.D() != c.d || tb.R() != c.r {
				t.Fatalf("Terminate %v (%#04x) M=%v D=%v R=%v, want %v M=%v D=%v R=%v",
					tb.Code(), uint16(tb.Code()), tb.M(), tb.D(), tb.R(), c.code, c.m, c.d, c.r)
			}
		})
	}
}

// TestReadSourceGoneWhileResponding: the source MR is deregistered after
// the Read Request was accepted and before its response is sent; the
// responder sends a Terminate with the reconstructed Read Request.
func TestReadSourceGoneWhileResponding(t *testing.T) {
	h := newHarness(t, defaultOpts())
	a, b := h.a, h.b
	b.qp.Mu.Lock()
	b.qp.blocked = true // hold B's transmissions
	gen := b.qp.gen
	b.qp.Mu.Unlock()
	a.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRRDMARead, SGL: []verbs.SGE{a.sge(0, 5000)}, RemoteAddr: b.va(64), RKey: b.mr.RKey()})
	h.run()
	if b.stack.ctr.Get(ReadRequestsRcvd) != 1 {
		t.Fatal("read request not received")
	}
	if err := b.mem.Deregister(b.mr); err != nil {
		t.Fatal(err)
	}
	b.qp.writableFunc(gen)()
	h.run()
	tb := h.terminateOn(transport.BtoA, b.qp.txFraming)
	if tb == nil || tb.Code() != wire.TermRDMAPInvalidSTag || !tb.R() || len(tb.RDMAPHeader()) != wire.ReadRequestLen {
		t.Fatalf("Terminate %x", []byte(tb))
	}
	if rr := wire.ReadRequest(tb.RDMAPHeader()); rr.Size() != 5000 || rr.SourceTO() != b.va(64) || rr.SinkSTag() != a.mr.LKey() {
		t.Fatalf("reconstructed Read Request %+v", rr.Fields())
	}
	wantWC(t, a.scq.take(), verbs.WC{WRID: 1, Status: verbs.WCRemAccessErr})
}
