package iwarp

import (
	"errors"
	"testing"

	"github.com/rnic/rnic/iwarp/wire"
	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/transport"
	"github.com/rnic/rnic/transport/stream/simstream"
)

// Each case makes A do something B must refuse, and checks B's Terminate
// on the wire (code and attached headers), the completions on both sides,
// the counters, and that both QPs end in ERR.
func TestTerminates(t *testing.T) {
	type env struct {
		h    *harness
		a, b *node
	}
	badKey := func(e env) uint32 { return e.b.mr.RKey() ^ 0x100 }
	cases := []struct {
		name     string
		opts     func(*opts)
		run      func(t *testing.T, e env)
		code     wire.TermCode
		m, d, r  bool
		rdmaHdr  int // bytes of the attached RDMAP header
		counter  Counter
		aWCs     []verbs.WC
		bRecvWCs []verbs.WC
		bEvent   verbs.AsyncEvent
	}{
		{
			name: "write bad stag",
			run: func(t *testing.T, e env) {
				e.a.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRRDMAWrite, SGL: []verbs.SGE{e.a.sge(0, 100)}, RemoteAddr: e.b.va(0), RKey: badKey(e)})
				e.a.post(t, verbs.SendWR{ID: 2, Opcode: verbs.WRRDMARead, SGL: []verbs.SGE{e.a.sge(0, 100)}, RemoteAddr: e.b.va(0), RKey: e.b.mr.RKey()})
			},
			code: wire.TermDDPTaggedInvalidSTag, m: true, d: true, counter: BadSTag,
			// The WRITE completed when the stream took it (local
			// completion); the READ behind it gets the remote error.
			aWCs:   []verbs.WC{{WRID: 1, Opcode: verbs.WCRDMAWrite}, {WRID: 2, Status: verbs.WCRemAccessErr}},
			bEvent: verbs.EventQPAccessErr,
		},
		{
			name: "write out of bounds",
			run: func(t *testing.T, e env) {
				e.a.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRRDMAWrite, SGL: []verbs.SGE{e.a.sge(0, 100)}, RemoteAddr: e.b.va(bufSize - 50), RKey: e.b.mr.RKey()})
				e.a.post(t, verbs.SendWR{ID: 2, Opcode: verbs.WRRDMARead, SGL: []verbs.SGE{e.a.sge(0, 100)}, RemoteAddr: e.b.va(0), RKey: e.b.mr.RKey()})
			},
			code: wire.TermDDPTaggedBaseBounds, m: true, d: true, counter: BaseBounds,
			aWCs:   []verbs.WC{{WRID: 1, Opcode: verbs.WCRDMAWrite}, {WRID: 2, Status: verbs.WCRemAccessErr}},
			bEvent: verbs.EventQPAccessErr,
		},
		{
			name: "write without REMOTE_WRITE on the MR",
			opts: func(o *opts) { o.mrAccess = memory.LocalWrite | memory.RemoteRead },
			run: func(t *testing.T, e env) {
				e.a.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRRDMAWrite, SGL: []verbs.SGE{e.a.sge(0, 100)}, RemoteAddr: e.b.va(0), RKey: e.b.mr.RKey()})
			},
			code: wire.TermDDPTaggedInvalidSTag, m: true, d: true, counter: AccessViolation,
			aWCs:   []verbs.WC{{WRID: 1, Opcode: verbs.WCRDMAWrite}},
			bEvent: verbs.EventQPAccessErr,
		},
		{
			name: "write without REMOTE_WRITE on the QP",
			opts: func(o *opts) { o.access = memory.RemoteRead },
			run: func(t *testing.T, e env) {
				e.a.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRRDMAWrite, SGL: []verbs.SGE{e.a.sge(0, 100)}, RemoteAddr: e.b.va(0), RKey: e.b.mr.RKey()})
			},
			code: wire.TermDDPTaggedInvalidSTag, m: true, d: true, counter: AccessViolation,
			aWCs:   []verbs.WC{{WRID: 1, Opcode: verbs.WCRDMAWrite}},
			bEvent: verbs.EventQPAccessErr,
		},
		{
			name: "read bad stag",
			run: func(t *testing.T, e env) {
				e.a.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRRDMARead, SGL: []verbs.SGE{e.a.sge(0, 100)}, RemoteAddr: e.b.va(0), RKey: badKey(e)})
				e.a.post(t, verbs.SendWR{ID: 2, Opcode: verbs.WRSend, SGL: []verbs.SGE{e.a.sge(0, 100)}})
			},
			code: wire.TermRDMAPInvalidSTag, m: true, d: true, r: true, rdmaHdr: wire.ReadRequestLen, counter: BadSTag,
			aWCs:   []verbs.WC{{WRID: 1, Status: verbs.WCRemAccessErr}, {WRID: 2, Status: verbs.WCWRFlushErr}},
			bEvent: verbs.EventQPAccessErr,
		},
		{
			name: "read out of bounds",
			run: func(t *testing.T, e env) {
				e.a.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRRDMARead, SGL: []verbs.SGE{e.a.sge(0, 100)}, RemoteAddr: e.b.va(bufSize - 10), RKey: e.b.mr.RKey()})
			},
			code: wire.TermRDMAPBaseBounds, m: true, d: true, r: true, rdmaHdr: wire.ReadRequestLen, counter: BaseBounds,
			aWCs:   []verbs.WC{{WRID: 1, Status: verbs.WCRemAccessErr}},
			bEvent: verbs.EventQPAccessErr,
		},
		{
			name: "read without REMOTE_READ",
			opts: func(o *opts) { o.access = memory.RemoteWrite },
			run: func(t *testing.T, e env) {
				e.a.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRRDMARead, SGL: []verbs.SGE{e.a.sge(0, 100)}, RemoteAddr: e.b.va(0), RKey: e.b.mr.RKey()})
			},
			code: wire.TermRDMAPAccessRights, m: true, d: true, r: true, rdmaHdr: wire.ReadRequestLen, counter: AccessViolation,
			aWCs:   []verbs.WC{{WRID: 1, Status: verbs.WCRemAccessErr}},
			bEvent: verbs.EventQPAccessErr,
		},
		{
			name: "atomic misaligned",
			run: func(t *testing.T, e env) {
				e.a.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRAtomicFetchAdd, SGL: []verbs.SGE{e.a.sge(0, 8)}, RemoteAddr: e.b.va(3), RKey: e.b.mr.RKey(), CompareAdd: 1})
			},
			code: wire.TermRDMAPBaseBounds, m: true, d: true, r: true, rdmaHdr: wire.AtomicRequestLen, counter: BaseBounds,
			aWCs:   []verbs.WC{{WRID: 1, Status: verbs.WCRemAccessErr}},
			bEvent: verbs.EventQPAccessErr,
		},
		{
			name: "IRD exceeded",
			opts: func(o *opts) { o.ird = 1 },
			run: func(t *testing.T, e env) {
				e.a.qp.Mu.Lock()
				e.a.qp.ord = 4 // ignore B's IRD, as a misbehaving peer would
				e.a.qp.Mu.Unlock()
				for i := range 3 {
					e.a.post(t, verbs.SendWR{ID: uint64(i + 1), Opcode: verbs.WRRDMARead, SGL: []verbs.SGE{e.a.sge(0, 100)}, RemoteAddr: e.b.va(0), RKey: e.b.mr.RKey()})
				}
			},
			code: wire.TermRDMAPCatastrophicStream, m: true, d: true, r: true, rdmaHdr: wire.ReadRequestLen, counter: IRDExceeded,
			// B answered the first READ before the second and third
			// arrived? No: all three arrive together; the first is
			// queued, the second exceeds IRD 1.
			aWCs:   []verbs.WC{{WRID: 1, Status: verbs.WCRemOpErr}, {WRID: 2, Status: verbs.WCWRFlushErr}, {WRID: 3, Status: verbs.WCWRFlushErr}},
			bEvent: verbs.EventQPReqErr,
		},
		{
			name: "send without receive buffer",
			run: func(t *testing.T, e env) {
				e.a.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRSend, SGL: []verbs.SGE{e.a.sge(0, 100)}})
			},
			code: wire.TermDDPUntaggedNoBuffer, m: true, d: true, counter: NoRecvBuf,
			aWCs:   []verbs.WC{{WRID: 1, Opcode: verbs.WCSend}},
			bEvent: verbs.EventQPReqErr,
		},
		{
			name: "write with imm without receive buffer",
			run: func(t *testing.T, e env) {
				e.a.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRRDMAWriteWithImm, SGL: []verbs.SGE{e.a.sge(0, 100)}, RemoteAddr: e.b.va(0), RKey: e.b.mr.RKey(), Imm: 5})
			},
			code: wire.TermDDPUntaggedNoBuffer, m: true, d: true, counter: NoRecvBuf,
			aWCs:   []verbs.WC{{WRID: 1, Opcode: verbs.WCRDMAWrite}},
			bEvent: verbs.EventQPReqErr,
		},
		{
			name: "send with imm without receive buffer",
			run: func(t *testing.T, e env) {
				e.a.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRSendWithImm, Imm: 5})
				e.a.post(t, verbs.SendWR{ID: 2, Opcode: verbs.WRRDMARead, SGL: []verbs.SGE{e.a.sge(0, 100)}, RemoteAddr: e.b.va(0), RKey: e.b.mr.RKey()})
			},
			code: wire.TermDDPUntaggedNoBuffer, m: true, d: true, counter: NoRecvBuf,
			aWCs:   []verbs.WC{{WRID: 1, Opcode: verbs.WCSend}, {WRID: 2, Status: verbs.WCRemOpErr}},
			bEvent: verbs.EventQPReqErr,
		},
		{
			name: "send too long",
			run: func(t *testing.T, e env) {
				e.b.recv(7, 0, 10)
				e.b.recv(8, 0, 10)
				e.a.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRSend, SGL: []verbs.SGE{e.a.sge(0, 100)}})
			},
			code: wire.TermDDPUntaggedTooLong, m: true, d: true, counter: TooLong,
			aWCs:     []verbs.WC{{WRID: 1, Opcode: verbs.WCSend}},
			bRecvWCs: []verbs.WC{{WRID: 7, Status: verbs.WCLocLenErr}, {WRID: 8, Status: verbs.WCWRFlushErr}},
			bEvent:   verbs.EventQPReqErr,
		},
		{
			name: "send with invalidate of an ordinary MR",
			run: func(t *testing.T, e env) {
				e.b.recv(7, 0, 100)
				e.a.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRSendWithInv, SGL: []verbs.SGE{e.a.sge(0, 10)}, InvRKey: e.b.mr.RKey()})
			},
			code: wire.TermRDMAPOpCannotInvalidate, m: true, d: true, r: true, counter: InvalidateErr,
			aWCs:     []verbs.WC{{WRID: 1, Opcode: verbs.WCSend}},
			bRecvWCs: []verbs.WC{{WRID: 7, Status: verbs.WCLocProtErr}},
			bEvent:   verbs.EventQPReqErr,
		},
		{
			name: "crc error",
			// A's stream: MPA Request (20+4), the RTR FPDU (20), then the
			// Send's FPDU: corrupt a payload byte.
			opts: func(o *opts) { o.sim.Tamper = simstream.CorruptAt(transport.AtoB, 24+20+30, 0x01) },
			run: func(t *testing.T, e env) {
				e.b.recv(7, 0, 100)
				e.a.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRSend, SGL: []verbs.SGE{e.a.sge(0, 100)}})
				e.a.post(t, verbs.SendWR{ID: 2, Opcode: verbs.WRRDMARead, SGL: []verbs.SGE{e.a.sge(0, 100)}, RemoteAddr: e.b.va(0), RKey: e.b.mr.RKey()})
			},
			code: wire.TermLLPCRC, counter: CRCErr,
			aWCs:     []verbs.WC{{WRID: 1, Opcode: verbs.WCSend}, {WRID: 2, Status: verbs.WCRemOpErr}},
			bRecvWCs: []verbs.WC{{WRID: 7, Status: verbs.WCWRFlushErr}},
			bEvent:   verbs.EventQPFatal,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := defaultOpts()
			o.trace = true
			if c.opts != nil {
				c.opts(&o)
			}
			h := newHarness(t, o)
			if h.result == nil || h.result.Err != nil {
				t.Fatalf("connect: %+v", h.result)
			}
			e := env{h, h.a, h.b}
			c.run(t, e)
			h.run()
			defer func() {
				if t.Failed() {
					h.dumpTrace()
				}
			}()
			h.wantState(h.a, verbs.QPSErr)
			h.wantState(h.b, verbs.QPSErr)
			tb := h.terminateOn(transport.BtoA, h.b.qp.txFraming)
			if tb == nil {
				t.Fatal("B sent no Terminate")
			}
			if tb.Code() != c.code || tb.M() != c.m || tb.D() != c.d || tb.R() != c.r {
				t.Fatalf("Terminate %v (%#04x) M=%v D=%v R=%v, want %v M=%v D=%v R=%v",
					tb.Code(), uint16(tb.Code()), tb.M(), tb.D(), tb.R(), c.code, c.m, c.d, c.r)
			}
			if c.d {
				hd := tb.DDPHeader()
				if len(hd) < 2 || tb.DDPSegmentLength() < uint16(len(hd)) {
					t.Fatalf("terminated DDP header %x, length %d", hd, tb.DDPSegmentLength())
				}
			}
			if c.r && len(tb.RDMAPHeader()) != c.rdmaHdr {
				t.Fatalf("RDMAP header %d bytes, want %d", len(tb.RDMAPHeader()), c.rdmaHdr)
			}
			if te := h.b.termErr(); te == nil || !te.Sent || te.Code != c.code {
				t.Fatalf("B's disconnect reason %v", te)
			}
			if c.counter == BadSTag { // counted against the peer that sent it
				want := memory.Peer{Addr: h.a.qp.local.Addr(), ID: uint32(h.a.qp.local.Port())}
				if peers, total := h.b.mem.KeyFailures(); total != 1 || len(peers) != 1 || peers[0].Peer != want {
					t.Fatalf("key failures %+v (total %d), want one of %v", peers, total, want)
				}
			}
			if te := h.a.termErr(); te == nil || te.Sent || te.Code != c.code {
				t.Fatalf("A's disconnect reason %v", te)
			}
			if h.b.stack.ctr.Get(c.counter) == 0 || h.b.stack.ctr.Get(TermSent) != 1 || h.a.stack.ctr.Get(TermRcvd) != 1 {
				t.Fatalf("counters: %v=%d term_sent=%d term_rcvd=%d", c.counter, h.b.stack.ctr.Get(c.counter),
					h.b.stack.ctr.Get(TermSent), h.a.stack.ctr.Get(TermRcvd))
			}
			wantWC(t, h.a.scq.take(), c.aWCs...)
			wantWC(t, h.b.rcq.take(), c.bRecvWCs...)
			if len(h.b.events) == 0 || h.b.events[0] != c.bEvent {
				t.Fatalf("B events %v, want %v", h.b.events, c.bEvent)
			}
			if h.a.qp.conn != nil || h.b.qp.conn != nil {
				t.Fatal("streams not closed")
			}
		})
	}
}

func TestNoMatchingRTR(t *testing.T) {
	o := defaultOpts()
	o.a = Config{RTR: RTRRead}
	o.b = Config{RTR: RTRWrite}
	h := newHarness(t, o)
	// The responder refuses a request with no RTR it accepts.
	if h.result == nil || h.result.Err == nil || h.b.stack.ctr.Get(NoMatchingRTR) != 1 {
		t.Fatalf("result %+v", h.result)
	}
}

func TestPostLimits(t *testing.T) {
	o := defaultOpts()
	o.sqDepth = 2
	h := newHarness(t, o)
	a := h.a
	// A READ takes up to max_send_sge sink SGEs (one Read Request each).
	if err := a.qp.PostSend(&verbs.SendWR{Opcode: verbs.WRRDMARead, SGL: []verbs.SGE{a.sge(0, 1), a.sge(1, 1), a.sge(2, 1), a.sge(3, 1), a.sge(4, 1)}}); err != ErrTooManySGE {
		t.Fatalf("five-SGE READ on a QP of max_send_sge 4: %v", err)
	}
	// SEND_WITH_IMM carries no payload on iWARP (RFC 7306 Immediate Data).
	if err := a.qp.PostSend(&verbs.SendWR{Opcode: verbs.WRSendWithImm, SGL: []verbs.SGE{a.sge(0, 1)}}); !errors.Is(err, ErrImmPayload) || !errors.Is(err, ErrUnsupported) {
		t.Fatalf("SEND_WITH_IMM with a payload: %v", err)
	}
	if err := a.qp.PostSend(&verbs.SendWR{Opcode: verbs.WRSendWithImm, Flags: verbs.SendInline, Inline: []byte("x")}); !errors.Is(err, ErrImmPayload) {
		t.Fatalf("inline SEND_WITH_IMM with a payload: %v", err)
	}
	a.qp.Mu.Lock()
	a.qp.blocked = true // hold everything in the queue
	a.qp.Mu.Unlock()
	a.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRRDMAWrite, SGL: []verbs.SGE{a.sge(0, 1)}, RKey: h.b.mr.RKey(), RemoteAddr: h.b.va(0)})
	a.post(t, verbs.SendWR{ID: 2, Opcode: verbs.WRRDMAWrite, SGL: []verbs.SGE{a.sge(0, 1)}, RKey: h.b.mr.RKey(), RemoteAddr: h.b.va(0)})
	if err := a.qp.PostSend(&verbs.SendWR{Opcode: verbs.WRRDMAWrite}); err != ErrSendQueueFull {
		t.Fatalf("third WR: %v", err)
	}
	// Modify: RTS→RTS allowed, INIT→RTS refused on an idle QP, SQD refused.
	if err := a.qp.Modify(verbs.QPSRTS, &verbs.QPAttr{State: verbs.QPSRTS}, verbs.AttrState); err != nil {
		t.Fatal(err)
	}
	if err := a.qp.Modify(verbs.QPSRTS, &verbs.QPAttr{State: verbs.QPSSQD}, verbs.AttrState); err == nil {
		t.Fatal("SQD accepted")
	}
	eng, _ := h.b.stack.CreateQP(&verbs.QPConfig{Type: verbs.QPTypeRC, QPN: 77, PD: 1, Memory: h.b.mem, SendCQ: h.b.scq, RecvCQ: h.b.rcq, RQ: h.b.rq})
	eng.Modify(verbs.QPSReset, &verbs.QPAttr{State: verbs.QPSInit}, verbs.AttrState)
	if err := eng.Modify(verbs.QPSInit, &verbs.QPAttr{State: verbs.QPSRTR}, verbs.AttrState); err == nil {
		t.Fatal("INIT→RTR accepted without a connection")
	}
	if _, err := h.b.stack.CreateQP(&verbs.QPConfig{Type: verbs.QPTypeUD, QPN: 78, PD: 1, Memory: h.b.mem, SendCQ: h.b.scq, RecvCQ: h.b.rcq, RQ: h.b.rq}); err == nil {
		t.Fatal("UD QP created")
	}
}
