package iwarp

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/rnic/rnic/iwarp/wire"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/transport"
	"github.com/rnic/rnic/transport/stream"
	"github.com/rnic/rnic/transport/stream/simstream"
)

// exchange runs a SEND each way and a READ, to show the connection works.
func exchange(t *testing.T, h *harness) {
	t.Helper()
	a, b := h.a, h.b
	fill(a.buf[:3000], 9)
	fill(b.buf[:3000], 5)
	b.recv(1, 100000, 3000)
	a.recv(1, 100000, 3000)
	a.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRSend, SGL: []verbs.SGE{a.sge(0, 3000)}})
	b.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRSend, SGL: []verbs.SGE{b.sge(0, 3000)}})
	a.post(t, verbs.SendWR{ID: 2, Opcode: verbs.WRRDMARead, SGL: []verbs.SGE{a.sge(200000, 3000)}, RemoteAddr: b.va(0), RKey: b.mr.RKey()})
	h.run()
	wantWC(t, a.scq.take(), verbs.WC{WRID: 1, Opcode: verbs.WCSend}, verbs.WC{WRID: 2, Opcode: verbs.WCRDMARead})
	wantWC(t, b.scq.take(), verbs.WC{WRID: 1, Opcode: verbs.WCSend})
	wantWC(t, a.rcq.take(), verbs.WC{WRID: 1, Opcode: verbs.WCRecv, ByteLen: 3000})
	wantWC(t, b.rcq.take(), verbs.WC{WRID: 1, Opcode: verbs.WCRecv, ByteLen: 3000})
	if !bytes.Equal(b.buf[100000:103000], a.buf[:3000]) || !bytes.Equal(a.buf[100000:103000], b.buf[:3000]) ||
		!bytes.Equal(a.buf[200000:203000], b.buf[:3000]) {
		t.Fatal("data mismatch")
	}
}

func TestMPAVariants(t *testing.T) {
	cases := []struct {
		name       string
		a, b       Config
		rev        uint8
		crc        bool
		rtr        string
		markersAB  bool // A sends markers (B asked)
		markersBA  bool
		wantIRDORD bool
	}{
		{name: "default", rev: 2, crc: true, rtr: "write", wantIRDORD: true},
		{name: "rev1 initiator", a: Config{MPARev: 1}, rev: 1, crc: true, rtr: "none"},
		{name: "rev1 responder", b: Config{MPARev: 1}, rev: 1, crc: true, rtr: "none"},
		{name: "no crc", a: Config{NoCRC: true}, b: Config{NoCRC: true}, rev: 2, crc: false, rtr: "write", wantIRDORD: true},
		{name: "crc if initiator asks", b: Config{NoCRC: true}, rev: 2, crc: true, rtr: "write", wantIRDORD: true},
		{name: "crc if responder asks", a: Config{NoCRC: true}, rev: 2, crc: true, rtr: "write", wantIRDORD: true},
		{name: "strict crc both", a: Config{StrictCRC: true}, b: Config{StrictCRC: true}, rev: 2, crc: true, rtr: "write", wantIRDORD: true},
		{name: "read rtr (initiator)", a: Config{RTR: RTRRead}, rev: 2, crc: true, rtr: "read", wantIRDORD: true},
		{name: "read rtr (responder)", b: Config{RTR: RTRRead}, rev: 2, crc: true, rtr: "read", wantIRDORD: true},
		{name: "no rtr", a: Config{RTR: RTRNone}, rev: 2, crc: true, rtr: "none", wantIRDORD: true},
		{name: "send rtr (initiator)", a: Config{RTR: RTRSend}, rev: 2, crc: true, rtr: "send", wantIRDORD: true},
		{name: "send rtr (both)", a: Config{RTR: RTRSend}, b: Config{RTR: RTRSend}, rev: 2, crc: true, rtr: "send", wantIRDORD: true},
		{name: "any rtr picks write", a: Config{RTR: RTRAny}, rev: 2, crc: true, rtr: "write", wantIRDORD: true},
		{name: "any rtr, send responder", a: Config{RTR: RTRAny}, b: Config{RTR: RTRSend}, rev: 2, crc: true, rtr: "send", wantIRDORD: true},
		{name: "any rtr, read responder", a: Config{RTR: RTRAny}, b: Config{RTR: RTRRead}, rev: 2, crc: true, rtr: "read", wantIRDORD: true},
		{name: "send rtr, markers, no crc", a: Config{RTR: RTRSend, Markers: true, NoCRC: true}, b: Config{NoCRC: true, Markers: true}, rev: 2, crc: false, rtr: "send", markersAB: true, markersBA: true, wantIRDORD: true},
		{name: "markers both ways", a: Config{Markers: true}, b: Config{Markers: true}, rev: 2, crc: true, rtr: "write", markersAB: true, markersBA: true, wantIRDORD: true},
		{name: "markers to A, no crc", a: Config{Markers: true, NoCRC: true}, b: Config{NoCRC: true}, rev: 2, crc: false, rtr: "write", markersBA: true, wantIRDORD: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := defaultOpts()
			o.a, o.b = c.a, c.b
			o.sim.Chop, o.sim.Seed = 0.3, 3
			o.trace = true
			h := newHarness(t, o)
			if h.result == nil || h.result.Err != nil {
				h.dumpTrace()
				t.Fatalf("result %+v", h.result)
			}
			r := h.result
			if r.Rev != c.rev || r.CRC != c.crc || r.RTR != c.rtr || r.HasIRDORD != c.wantIRDORD {
				t.Fatalf("result %+v", r)
			}
			if h.a.qp.txFraming != (wire.Framing{CRC: c.crc, Markers: c.markersAB}) ||
				h.b.qp.txFraming != (wire.Framing{CRC: c.crc, Markers: c.markersBA}) {
				t.Fatalf("framings A %+v B %+v", h.a.qp.txFraming, h.b.qp.txFraming)
			}
			exchange(t, h)
			if c.rtr != "none" && (h.a.stack.ctr.Get(RTRSent) != 1 || h.b.stack.ctr.Get(RTRRcvd) != 1) {
				t.Fatal("RTR counters")
			}
			if c.rtr == "none" && h.a.stack.ctr.Get(RTRSent) != 0 {
				t.Fatal("RTR sent")
			}
			// The wire: A's first FPDU is the RTR.
			_, segs := fpdus(t, h.wireBuf[transport.AtoB], h.a.qp.txFraming)
			first := wire.DDPHeader(segs[0])
			switch c.rtr {
			case "write":
				if first.Opcode() != wire.OpWrite || len(segs[0]) != wire.DDPTaggedLen {
					t.Fatalf("first FPDU %x", segs[0])
				}
			case "read":
				var s wire.Segment
				if s.Decode(segs[0]) != nil || s.Opcode() != wire.OpReadRequest || s.ReadRequest().Size() != 0 {
					t.Fatalf("first FPDU %x", segs[0])
				}
			case "send":
				var s wire.Segment
				if s.Decode(segs[0]) != nil || s.Opcode() != wire.OpSend || len(s.Payload()) != 0 || s.DDP().MSN() != 1 || !s.DDP().Last() {
					t.Fatalf("first FPDU %x", segs[0])
				}
			}
			// B sent nothing before the RTR arrived: its first FPDU
			// follows A's (checked by B's Established event time).
			if !h.b.established() {
				t.Fatal("B not established")
			}
		})
	}
}

func TestStrictCRCRejects(t *testing.T) {
	for _, c := range []struct {
		name string
		a, b Config
	}{
		{"responder strict, initiator no crc", Config{NoCRC: true}, Config{StrictCRC: true}},
		{"responder strict no crc, initiator crc", Config{}, Config{StrictCRC: true, NoCRC: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := defaultOpts()
			o.a, o.b = c.a, c.b
			h := newHarness(t, o)
			if h.result == nil || !errors.Is(h.result.Err, ErrRejected) {
				t.Fatalf("result %+v", h.result)
			}
			if h.req != nil {
				t.Fatal("the application saw a request the policy refuses")
			}
			if h.b.stack.ctr.Get(StrictCRCRejects) != 1 {
				t.Fatal("counter")
			}
		})
	}
	// Initiator strict, responder without CRC: the responder must still
	// use CRC (the initiator asked), so the Reply has C... unless it is
	// NoCRC and the initiator NoCRC too: strict initiator with NoCRC and a
	// responder that asks for CRC refuses the Reply.
	o := defaultOpts()
	o.a = Config{StrictCRC: true, NoCRC: true}
	h := newHarness(t, o)
	if h.result == nil || !errors.Is(h.result.Err, ErrMPAInvalid) {
		t.Fatalf("result %+v", h.result)
	}
	h.wantState(h.a, verbs.QPSInit)
}

func TestConnectTimeoutAndRefused(t *testing.T) {
	o := defaultOpts()
	o.noConnect = true
	h := newHarness(t, o)
	// Nobody listens: refused.
	var res *ConnectResult
	h.a.stack.Connect(h.a.qp.QPN(), netip.AddrPortFrom(addrB, 9), nil, 1, 1, func(r ConnectResult) { res = &r })
	h.run()
	if res == nil || !errors.Is(res.Err, stream.ErrRefused) {
		t.Fatalf("result %+v", res)
	}
	// A listener that accepts the TCP connection but never answers.
	l, err := h.net.Listen(netip.AddrPortFrom(addrB, 7000))
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	l.SetAcceptor(func(c stream.Conn) { c.SetReceiver(func(p []byte) { got = append(got, p...) }, func(error) {}) })
	res = nil
	start := h.clk.Now()
	h.a.stack.Connect(h.a.qp.QPN(), netip.AddrPortFrom(addrB, 7000), []byte("x"), 1, 1, func(r ConnectResult) { res = &r })
	h.run()
	if res == nil || !errors.Is(res.Err, ErrMPATimeout) {
		t.Fatalf("result %+v", res)
	}
	if d := h.clk.Now() - start; d < DefaultConnectTimeout || d > DefaultConnectTimeout+time.Second {
		t.Fatalf("timed out after %v", d)
	}
	if _, _, err := wire.ParseMPAFrame(got); err != nil {
		t.Fatalf("no MPA Request sent: %v", err)
	}
	h.wantState(h.a, verbs.QPSInit)
	if h.a.stack.ctr.Get(MPATimeouts) != 1 {
		t.Fatal("counter")
	}
}

func TestAcceptTimeout(t *testing.T) {
	o := defaultOpts()
	o.noConnect = true
	h := newHarness(t, o)
	h.listen(o)
	var closed error
	start := h.clk.Now()
	var end time.Duration
	h.net.Dial(addrA, netip.AddrPortFrom(addrB, portB), func(c stream.Conn, err error) {
		if err != nil {
			t.Error(err)
			return
		}
		c.SetReceiver(func([]byte) {}, func(err error) { closed, end = err, h.clk.Now() })
		c.Write([]byte("MPA ID Req")) // a prefix, never completed
	})
	h.run()
	if !errors.Is(closed, stream.ErrReset) {
		t.Fatalf("closed with %v", closed)
	}
	if d := end - start; d < DefaultAcceptTimeout || d > DefaultAcceptTimeout+time.Second {
		t.Fatalf("reset after %v", d)
	}
	if h.b.stack.ctr.Get(MPATimeouts) != 1 || h.req != nil {
		t.Fatal("timeout not counted, or a request surfaced")
	}
}

func TestInvalidMPA(t *testing.T) {
	o := defaultOpts()
	o.noConnect = true
	h := newHarness(t, o)
	h.listen(o)
	var closed error
	h.net.Dial(addrA, netip.AddrPortFrom(addrB, portB), func(c stream.Conn, err error) {
		c.SetReceiver(func([]byte) {}, func(err error) { closed = err })
		c.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
	})
	h.run()
	if !errors.Is(closed, stream.ErrReset) || h.b.stack.ctr.Get(MPAInvalid) != 1 {
		t.Fatalf("closed %v, invalid %d", closed, h.b.stack.ctr.Get(MPAInvalid))
	}
	// A responder that answers with a Request key.
	l, _ := h.net.Listen(netip.AddrPortFrom(addrB, 7001))
	l.SetAcceptor(func(c stream.Conn) {
		c.SetReceiver(func([]byte) {
			b, _ := wire.AppendMPAFrame(nil, &wire.MPAFields{Rev: 2})
			c.Write(b)
		}, func(error) {})
	})
	var res *ConnectResult
	h.a.stack.Connect(h.a.qp.QPN(), netip.AddrPortFrom(addrB, 7001), nil, 1, 1, func(r ConnectResult) { res = &r })
	h.run()
	if res == nil || !errors.Is(res.Err, ErrMPAInvalid) {
		t.Fatalf("result %+v", res)
	}
}

func TestDisconnect(t *testing.T) {
	h := newHarness(t, defaultOpts())
	a, b := h.a, h.b
	b.recv(1, 0, 10)
	b.recv(2, 0, 10)
	a.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRSend, SGL: []verbs.SGE{a.sge(0, 10)}})
	h.run()
	if err := a.stack.Disconnect(a.qp.QPN()); err != nil {
		t.Fatal(err)
	}
	h.run()
	h.wantState(a, verbs.QPSErr)
	h.wantState(b, verbs.QPSErr)
	wantWC(t, a.scq.take(), verbs.WC{WRID: 1, Opcode: verbs.WCSend})
	wantWC(t, b.rcq.take(), verbs.WC{WRID: 1, Opcode: verbs.WCRecv, ByteLen: 10}, verbs.WC{WRID: 2, Status: verbs.WCWRFlushErr})
	for _, n := range []*node{a, b} {
		n.mu.Lock()
		last := n.conn[len(n.conn)-1]
		n.mu.Unlock()
		if last.Type != EventDisconnected {
			t.Fatalf("%s: events %+v", n.name, n.conn)
		}
	}
	if a.qp.conn != nil || b.qp.conn != nil {
		t.Fatal("streams still attached")
	}
	// Posting in ERR flushes.
	a.post(t, verbs.SendWR{ID: 9, Opcode: verbs.WRSend})
	wantWC(t, a.scq.take(), verbs.WC{WRID: 9, Status: verbs.WCWRFlushErr})
}

func TestStreamReset(t *testing.T) {
	o := defaultOpts()
	// Reset A's direction after 2000 bytes: in the middle of a Send.
	o.sim.Reset = &simstream.ResetPoint{Dir: transport.AtoB, Offset: 2000}
	h := newHarness(t, o)
	a, b := h.a, h.b
	b.recv(1, 0, 100000)
	a.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRRDMARead, SGL: []verbs.SGE{a.sge(0, 100)}, RemoteAddr: b.va(0), RKey: b.mr.RKey()})
	h.run()
	a.scq.take()
	a.post(t, verbs.SendWR{ID: 2, Opcode: verbs.WRSend, SGL: []verbs.SGE{a.sge(0, 50000)}})
	a.post(t, verbs.SendWR{ID: 3, Opcode: verbs.WRRDMARead, SGL: []verbs.SGE{a.sge(0, 100)}, RemoteAddr: b.va(0), RKey: b.mr.RKey()})
	h.run()
	h.wantState(a, verbs.QPSErr)
	h.wantState(b, verbs.QPSErr)
	// The Send was accepted by the stream (local completion); the READ
	// never got its response.
	wantWC(t, a.scq.take(), verbs.WC{WRID: 2, Opcode: verbs.WCSend}, verbs.WC{WRID: 3, Status: verbs.WCWRFlushErr})
	wantWC(t, b.rcq.take(), verbs.WC{WRID: 1, Status: verbs.WCWRFlushErr})
	if a.stack.ctr.Get(StreamLost) != 1 || b.stack.ctr.Get(StreamLost) != 1 {
		t.Fatal("stream_lost")
	}
}

// TestResponderWaitsForRTR: the responder posts a Send as soon as it has
// accepted; nothing leaves before the initiator's RTR arrived.
func TestResponderWaitsForRTR(t *testing.T) {
	o := defaultOpts()
	o.noConnect = true
	h := newHarness(t, o)
	a, b := h.a, h.b
	a.recv(1, 0, 100)
	var framedBeforeRTR uint64
	h.b.stack.Listen(netip.AddrPortFrom(addrB, portB), func(r *ConnRequest) {
		if err := r.Accept(b.qp.QPN(), nil, 4, 4); err != nil {
			t.Error(err)
		}
		b.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRSend, SGL: []verbs.SGE{b.sge(0, 100)}})
		b.qp.Mu.Lock()
		framedBeforeRTR = b.qp.txTotal
		b.qp.Mu.Unlock()
	})
	h.connect(o)
	if framedBeforeRTR != 0 {
		t.Fatalf("B framed %d bytes before the RTR", framedBeforeRTR)
	}
	wantWC(t, a.rcq.take(), verbs.WC{WRID: 1, Opcode: verbs.WCRecv, ByteLen: 100})
	wantWC(t, b.scq.take(), verbs.WC{WRID: 1, Opcode: verbs.WCSend})
}

// TestSendRTR: the Send-type RTR (RFC 6581 flag B) is a zero-length Send
// with queue 0's first MSN. The responder consumes no receive WQE for it
// and completes nothing, and the initiator's Sends and Immediate Data
// carry MSN 2 onwards.
func TestSendRTR(t *testing.T) {
	for _, chop := range []float64{0, 0.5} {
		o := defaultOpts()
		o.a.RTR = RTRAny
		o.b.RTR = RTRSend
		o.sim.Chop, o.sim.Seed = chop, 5
		o.trace = true
		// B's receive WQE is posted before the connection exists: the RTR
		// must leave it alone.
		o.noConnect = true
		h := newHarness(t, o)
		a, b := h.a, h.b
		b.recv(1, 0, 100)
		b.recv(2, 100, 100)
		h.listen(o)
		h.connect(o)
		if h.result == nil || h.result.Err != nil || h.result.RTR != "send" {
			h.dumpTrace()
			t.Fatalf("connect result %+v", h.result)
		}
		if !b.established() || b.stack.ctr.Get(RTRRcvd) != 1 {
			t.Fatal("B: no RTR")
		}
		if b.rq.Len() != 2 || len(b.rcq.take()) != 0 {
			t.Fatalf("the RTR consumed a receive WQE (%d left) or completed", b.rq.Len())
		}
		// The offer: A (RTRAny) sets A, B, C and D; B's Reply only A and B.
		reqA, _ := fpdus(t, h.wireBuf[transport.AtoB], a.qp.txFraming)
		if v := reqA.IRDORD(); !v.PeerToPeer || !v.SendRTR || !v.WriteRTR || !v.ReadRTR {
			t.Fatalf("request IRD/ORD %+v", v)
		}
		repB, _, _ := wire.ParseMPAFrame(h.wireBuf[transport.BtoA])
		if v := repB.IRDORD(); !v.PeerToPeer || !v.SendRTR || v.WriteRTR || v.ReadRTR {
			t.Fatalf("reply IRD/ORD %+v", v)
		}
		copy(a.buf, "hello")
		a.post(t, verbs.SendWR{ID: 10, Opcode: verbs.WRSend, SGL: []verbs.SGE{a.sge(0, 5)}})
		a.post(t, verbs.SendWR{ID: 11, Opcode: verbs.WRSendWithImm, Imm: 99})
		h.run()
		wantWC(t, a.scq.take(), verbs.WC{WRID: 10, Opcode: verbs.WCSend}, verbs.WC{WRID: 11, Opcode: verbs.WCSend})
		rw := b.rcq.take()
		wantWC(t, rw, verbs.WC{WRID: 1, Opcode: verbs.WCRecv, ByteLen: 5}, verbs.WC{WRID: 2, Opcode: verbs.WCRecv})
		if rw[1].Imm != 99 || rw[1].Flags != verbs.WCFlagWithImm || string(b.buf[:5]) != "hello" {
			t.Fatalf("completions %+v", rw)
		}
		segs := h.untaggedOn(transport.AtoB, a.qp.txFraming)
		if len(segs) != 3 {
			t.Fatalf("%d queue-0 segments", len(segs))
		}
		for i, s := range segs {
			if s.DDP().MSN() != uint32(i+1) {
				t.Fatalf("segment %d (%v): MSN %d", i, s.Opcode(), s.DDP().MSN())
			}
		}
		// B's own Sends to A are unaffected (A's queue 0 starts at 1).
		a.recv(1, 0, 100)
		b.post(t, verbs.SendWR{ID: 20, Opcode: verbs.WRSend, Flags: verbs.SendSignaled | verbs.SendInline, Inline: []byte("back")})
		h.run()
		wantWC(t, a.rcq.take(), verbs.WC{WRID: 1, Opcode: verbs.WCRecv, ByteLen: 4})
		h.wantState(a, verbs.QPSRTS)
		h.wantState(b, verbs.QPSRTS)
	}
}

// TestSendRTRMismatch: a Send-only initiator and a Write-only responder
// share no RTR (the responder rejects), and a responder expecting the Send
// RTR refuses a first Send that is not one (wrong MSN).
func TestSendRTRMismatch(t *testing.T) {
	o := defaultOpts()
	o.a.RTR, o.b.RTR = RTRSend, RTRWrite
	h := newHarness(t, o)
	if h.result == nil || h.result.Err == nil || h.b.stack.ctr.Get(NoMatchingRTR) != 1 {
		t.Fatalf("result %+v", h.result)
	}

	o = defaultOpts()
	o.a.RTR, o.b.RTR = RTRSend, RTRSend
	h = newHarness(t, o)
	b := h.b
	b.qp.Mu.Lock()
	b.qp.rtrWait = true // as if the RTR had not arrived yet
	b.qp.Mu.Unlock()
	b.inject(b.fpdu(&wire.Headers{DDP: wire.DDPFields{Opcode: wire.OpSend, Last: true, QN: wire.QNSend, MSN: 7}}, nil))
	h.run()
	tb := h.terminateOn(transport.BtoA, b.qp.txFraming)
	if tb == nil || tb.Code() != wire.TermLLPNoMatchingRTR {
		t.Fatalf("Terminate %x", []byte(tb))
	}
}

// TestDestroyCloses: a QP destroyed right after its Disconnect (a
// program's rdma_disconnect, then its QP destroyed), or destroyed while
// connected, closes the stream in order, as Linux releases a siw socket:
// the peer sees our FIN, not a reset, and its own FIN ends the stream.
func TestDestroyCloses(t *testing.T) {
	for _, disconnect := range []bool{true, false} {
		t.Run(fmt.Sprintf("disconnect=%v", disconnect), func(t *testing.T) {
			h := newHarness(t, defaultOpts())
			a, b := h.a, h.b
			if disconnect {
				if err := a.stack.Disconnect(a.qp.QPN()); err != nil {
					t.Fatal(err)
				}
			}
			a.qp.Destroy()
			h.run()
			h.wantState(b, verbs.QPSErr)
			b.mu.Lock()
			events := append([]ConnEvent(nil), b.conn...)
			b.mu.Unlock()
			last := events[len(events)-1]
			if last.Type != EventDisconnected || errors.Is(last.Err, stream.ErrReset) {
				t.Fatalf("B's connection ended with %+v, want an orderly close (no reset)", last)
			}
		})
	}
}
