package iwarp

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/rnic/rnic/iwarp/wire"
	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/transport"
	"github.com/rnic/rnic/transport/clock"
	"github.com/rnic/rnic/transport/stream/simstream"
)

// Test doubles for the objects nic provides, and a two-stack harness on
// the simulated network and the virtual clock.

type testCQ struct {
	mu        sync.Mutex
	wcs       []verbs.WC
	limit     int
	solicited int
}

func (c *testCQ) Push(wc *verbs.WC) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.limit > 0 && len(c.wcs) >= c.limit {
		return false
	}
	c.wcs = append(c.wcs, *wc)
	return true
}
func (c *testCQ) Solicited() { c.mu.Lock(); c.solicited++; c.mu.Unlock() }

func (c *testCQ) take() []verbs.WC {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.wcs
	c.wcs = nil
	return w
}

type testRQ struct {
	mu sync.Mutex
	q  []verbs.RecvWR
}

func (r *testRQ) Pop() (verbs.RecvWR, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.q) == 0 {
		return verbs.RecvWR{}, false
	}
	wr := r.q[0]
	r.q = r.q[1:]
	return wr, true
}

func (r *testRQ) PopFit(n uint64) (verbs.RecvWR, bool, bool) {
	if r.Len() == 0 {
		return verbs.RecvWR{}, false, false
	}
	if r.headLen() < n {
		return verbs.RecvWR{}, true, false
	}
	wr, _ := r.Pop()
	return wr, true, true
}

func (r *testRQ) headLen() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return memory.TotalLength(r.q[0].SGL)
}
func (r *testRQ) Len() int { r.mu.Lock(); defer r.mu.Unlock(); return len(r.q) }

type node struct {
	name   string
	stack  *Stack
	mem    *memory.Table
	addr   netip.Addr
	qp     *QP
	scq    *testCQ
	rcq    *testCQ
	rq     *testRQ
	buf    []byte
	mr     *memory.Region
	events []verbs.AsyncEvent
	conn   []ConnEvent
	mu     sync.Mutex
}

type opts struct {
	a, b      Config // per-side overrides (Clock and Network are filled in)
	access    memory.Access
	mrAccess  memory.Access
	ird, ord  uint16
	sqDepth   uint32
	maxSGE    uint32 // the QPs' max_send_sge (4 when 0)
	sim       simstream.Config
	trace     bool
	rejectPD  []byte // B rejects with this private data
	noAccept  bool
	pdA, pdB  []byte
	noConnect bool
}

func defaultOpts() opts {
	return opts{
		access:   memory.RemoteWrite | memory.RemoteRead | memory.RemoteAtomic,
		mrAccess: memory.LocalWrite | memory.RemoteWrite | memory.RemoteRead | memory.RemoteAtomic,
		ird:      16, ord: 16, sqDepth: 256,
	}
}

type harness struct {
	t       testing.TB
	clk     *clock.Virtual
	net     *simstream.Network
	a, b    *node
	trace   []string
	tmu     sync.Mutex
	wireBuf [2][]byte // bytes on the wire per direction (AtoB = A's, the dialer's)
	req     *ConnRequest
	result  *ConnectResult
	lis     *Listener
}

const bufSize = 1 << 20

var (
	addrA = netip.MustParseAddr("10.0.0.1")
	addrB = netip.MustParseAddr("10.0.0.2")
	portB = uint16(4791 + 1000)
)

func newHarness(t testing.TB, o opts) *harness {
	t.Helper()
	h := &harness{t: t, clk: clock.NewVirtual()}
	simc := o.sim
	tamper := simc.Tamper
	simc.Tamper = func(d transport.Direction, off int64, seg []byte) {
		if tamper != nil {
			tamper(d, off, seg)
		}
		h.wireBuf[d] = append(h.wireBuf[d], seg...)
	}
	h.net = simstream.NewNetwork(h.clk, simstream.NetConfig{Conn: simc})
	h.a = h.newNode("A", addrA, 1, o.a, o)
	h.b = h.newNode("B", addrB, 2, o.b, o)
	if !o.noConnect {
		h.listen(o)
		h.connect(o)
	}
	return h
}

func (h *harness) newNode(name string, addr netip.Addr, n byte, cfg Config, o opts) *node {
	t := h.t
	nd := &node{name: name, addr: addr, scq: &testCQ{}, rcq: &testCQ{}, rq: &testRQ{}}
	cfg.Clock, cfg.Network, cfg.Addr = h.clk, h.net, addr
	if o.trace {
		cfg.Trace = func(e TraceEvent) {
			h.tmu.Lock()
			h.trace = append(h.trace, name+" "+e.String())
			h.tmu.Unlock()
		}
	}
	cfg.OnConnEvent = func(e ConnEvent) { nd.mu.Lock(); nd.conn = append(nd.conn, e); nd.mu.Unlock() }
	var err error
	nd.stack, err = NewStack(cfg)
	if err != nil {
		t.Fatal(err)
	}
	nd.mem, err = memory.NewTable(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	nd.buf = make([]byte, bufSize)
	nd.mr, err = nd.mem.Register(1, nd.buf, 0x10000, o.mrAccess)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := nd.stack.CreateQP(&verbs.QPConfig{
		Type: verbs.QPTypeRC, QPN: 0x100 + uint32(n), PD: 1, Memory: nd.mem,
		SendCQ: nd.scq, RecvCQ: nd.rcq, RQ: nd.rq,
		Cap:   verbs.QPCap{MaxSendWR: o.sqDepth, MaxRecvWR: 1024, MaxSendSGE: cmp.Or(o.maxSGE, 4), MaxRecvSGE: 4, MaxInlineData: 256},
		Event: func(e verbs.AsyncEvent) { nd.events = append(nd.events, e) },
	})
	if err != nil {
		t.Fatal(err)
	}
	nd.qp = eng.(*QP)
	if err := nd.qp.Modify(verbs.QPSReset, &verbs.QPAttr{State: verbs.QPSInit, AccessFlags: o.access},
		verbs.AttrState|verbs.AttrAccessFlags); err != nil {
		t.Fatal(err)
	}
	return nd
}

func (h *harness) listen(o opts) {
	t := h.t
	l, err := h.b.stack.Listen(netip.AddrPortFrom(addrB, portB), func(r *ConnRequest) {
		h.req = r
		switch {
		case o.noAccept:
		case o.rejectPD != nil:
			if err := r.Reject(o.rejectPD); err != nil {
				t.Error(err)
			}
		default:
			if err := r.Accept(h.b.qp.QPN(), o.pdB, o.ird, o.ord); err != nil {
				t.Error(err)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	h.lis = l
}

func (h *harness) connect(o opts) {
	t := h.t
	err := h.a.stack.Connect(h.a.qp.QPN(), netip.AddrPortFrom(addrB, portB), o.pdA, o.ird, o.ord, func(r ConnectResult) {
		h.result = &r
	})
	if err != nil {
		t.Fatal(err)
	}
	h.run()
}

// run runs the virtual clock until nothing is pending or a minute of
// virtual time has passed.
func (h *harness) run() {
	limit := h.clk.Now() + time.Minute
	h.clk.Run(func() bool { return h.clk.Now() > limit })
}

func (h *harness) dumpTrace() {
	h.tmu.Lock()
	defer h.tmu.Unlock()
	for _, l := range h.trace {
		h.t.Log(l)
	}
}

// sge returns an SGE over [off, off+n) of the node's buffer.
func (n *node) sge(off, length int) verbs.SGE {
	return verbs.SGE{Addr: 0x10000 + uint64(off), Length: uint32(length), LKey: n.mr.LKey()}
}

// va is the remote address of buffer offset off.
func (n *node) va(off int) uint64 { return 0x10000 + uint64(off) }

func (n *node) post(t testing.TB, wr verbs.SendWR) {
	t.Helper()
	if wr.Flags == 0 {
		wr.Flags = verbs.SendSignaled
	}
	if err := n.qp.PostSend(&wr); err != nil {
		t.Fatal(err)
	}
}

func (n *node) recv(id uint64, off, length int) {
	n.rq.mu.Lock()
	n.rq.q = append(n.rq.q, verbs.RecvWR{ID: id, SGL: []verbs.SGE{n.sge(off, length)}})
	n.rq.mu.Unlock()
	n.qp.RecvPosted()
}

func fill(b []byte, seed byte) {
	for i := range b {
		b[i] = seed + byte(i*7) + byte(i>>9)
	}
}

func wantWC(t testing.TB, got []verbs.WC, want ...verbs.WC) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d completions %+v, want %d %+v", len(got), got, len(want), want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.WRID != w.WRID || g.Status != w.Status {
			t.Fatalf("completion %d: wrid=%d %v, want wrid=%d %v (all: %+v)", i, g.WRID, g.Status, w.WRID, w.Status, got)
		}
		if w.Status == verbs.WCSuccess && (g.Opcode != w.Opcode || (w.ByteLen != 0 && g.ByteLen != w.ByteLen)) {
			t.Fatalf("completion %d: %+v, want %+v", i, g, w)
		}
	}
}

func (h *harness) wantState(n *node, st verbs.QPState) {
	h.t.Helper()
	if got := n.qp.State(); got != st {
		h.dumpTrace()
		h.t.Fatalf("%s: QP state %v, want %v", n.name, got, st)
	}
}

// fpdus parses the bytes one side put on the wire: the MPA frame, then
// FPDUs framed as f.
func fpdus(t testing.TB, b []byte, f wire.Framing) (mpa wire.MPAFrame, segs [][]byte) {
	t.Helper()
	m, n, err := wire.ParseMPAFrame(b)
	if err != nil {
		t.Fatalf("wire: MPA frame: %v", err)
	}
	mpa = append(wire.MPAFrame(nil), m...)
	d := wire.NewDeframer(f, wire.MaxULPDU)
	p := b[n:]
	for len(p) > 0 {
		r, k, err := d.Next(p)
		p = p[k:]
		if err == wire.ErrIncomplete {
			break
		}
		if err != nil {
			t.Fatalf("wire: deframe: %v", err)
		}
		segs = append(segs, append([]byte(nil), r.ULPDU...))
	}
	return mpa, segs
}

// terminateOn returns the Terminate body a side sent, nil if none.
func (h *harness) terminateOn(dir transport.Direction, f wire.Framing) wire.Terminate {
	_, segs := fpdus(h.t, h.wireBuf[dir], f)
	for _, s := range segs {
		var seg wire.Segment
		if seg.Decode(s) == nil && seg.Opcode() == wire.OpTerminate {
			return seg.Terminate()
		}
	}
	return nil
}

func (n *node) termErr() *TerminateError {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, e := range n.conn {
		var te *TerminateError
		if e.Type == EventDisconnected && errors.As(e.Err, &te) {
			return te
		}
	}
	return nil
}

func (n *node) established() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, e := range n.conn {
		if e.Type == EventEstablished {
			return true
		}
	}
	return false
}

var _ = bytes.Equal
var _ = fmt.Sprint
