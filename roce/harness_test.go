package roce

import (
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/transport"
	"github.com/rnic/rnic/transport/clock"
)

// Test doubles for the objects nic provides, and a two-NIC harness on the
// simulated link and the virtual clock.

// testCQ locks so that a test on the real clock (backlog_test.go) may
// take completions while the engine pushes them.
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
func (c *testCQ) Solicited() {
	c.mu.Lock()
	c.solicited++
	c.mu.Unlock()
}

func (c *testCQ) take() []verbs.WC {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.wcs
	c.wcs = nil
	return w
}

type testRQ struct{ q []verbs.RecvWR }

func (r *testRQ) Pop() (verbs.RecvWR, bool) {
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

func (r *testRQ) headLen() uint64 { return memory.TotalLength(r.q[0].SGL) }
func (r *testRQ) Len() int        { return len(r.q) }

type node struct {
	name   string
	stack  *Stack
	mem    *memory.Table
	ep     *transport.SimEndpoint
	mac    [6]byte
	addr   netip.Addr
	qp     *QP
	scq    *testCQ
	rcq    *testCQ
	rq     *testRQ
	buf    []byte
	mr     *memory.Region
	events []verbs.AsyncEvent
}

type harness struct {
	t     testing.TB
	clk   *clock.Virtual
	a, b  *node
	trace []string
}

// qpOpts are the attributes a test may change from the defaults.
type qpOpts struct {
	mtu             verbs.MTU
	timeout         uint8
	retryCnt        uint8
	rnrRetry        uint8
	minRNRTimer     uint8
	maxRdAtomic     uint8
	maxDestRdAtomic uint8
	access          memory.Access
	sqDepth         uint32
	window          int
	useSRQ          bool
	v6              bool
	faults          transport.FaultConfig
	seed            uint64
	trace           bool
	qpType          verbs.QPType // RC unless set
	qkey            uint32       // UD
	bandwidth       uint64       // the link's bits per second; 0: unlimited
	budget          int          // the stacks' Config.Budget
}

func defaultOpts() qpOpts {
	return qpOpts{
		mtu: verbs.MTU1024, timeout: 14, retryCnt: 7, rnrRetry: 7, minRNRTimer: 12,
		maxRdAtomic: 16, maxDestRdAtomic: 16, sqDepth: 256,
		access: memory.RemoteWrite | memory.RemoteRead | memory.RemoteAtomic,
	}
}

const bufSize = 1 << 20

func newHarness(t testing.TB, o qpOpts) *harness {
	t.Helper()
	h := &harness{t: t, clk: clock.NewVirtual()}
	ea, eb := transport.NewSimLink(h.clk, transport.SimConfig{Seed: o.seed, Faults: o.faults, Bandwidth: o.bandwidth})
	h.a = h.newNode("A", ea, 1, o)
	h.b = h.newNode("B", eb, 2, o)
	h.connect(h.a, h.b, o)
	h.connect(h.b, h.a, o)
	return h
}

func (h *harness) newNode(name string, ep *transport.SimEndpoint, n byte, o qpOpts) *node {
	var trace func(TraceEvent)
	if o.trace {
		trace = func(e TraceEvent) { h.trace = append(h.trace, name+" "+e.String()) }
	}
	nd := newNodeOn(h.t, name, ep, h.clk, n, o, trace)
	nd.ep = ep
	return nd
}

// newNodeOn makes a node with its stack on link and clk.
func newNodeOn(t testing.TB, name string, link transport.Endpoint, clk clock.Clock, n byte, o qpOpts, trace func(TraceEvent)) *node {
	nd := &node{name: name, mac: [6]byte{2, 0, 0, 0, 0, n}, scq: &testCQ{}, rcq: &testCQ{}, rq: &testRQ{}}
	nd.addr = netip.AddrFrom4([4]byte{192, 0, 2, n})
	if o.v6 {
		nd.addr = netip.MustParseAddr(fmt.Sprintf("2001:db8::%d", n))
	}
	var err error
	cfg := Config{Link: link, Clock: clk, MAC: nd.mac, Addrs: []netip.Addr{nd.addr}, Window: o.window, DeferAcks: true, Budget: o.budget,
		Trace: trace}
	nd.stack, err = NewStack(cfg)
	if err != nil {
		t.Fatal(err)
	}
	nd.mem, err = memory.NewTable(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	nd.buf = make([]byte, bufSize)
	nd.mr, err = nd.mem.Register(1, nd.buf, 0x10000, memory.LocalWrite|o.access)
	if err != nil {
		t.Fatal(err)
	}
	typ := o.qpType
	if typ == 0 {
		typ = verbs.QPTypeRC
	}
	eng, err := nd.stack.CreateQP(&verbs.QPConfig{
		Type: typ, QPN: 0x100 + uint32(n), PD: 1, Memory: nd.mem, PortMTU: verbs.MTU1024,
		SendCQ: nd.scq, RecvCQ: nd.rcq, RQ: nd.rq, UsesSRQ: o.useSRQ,
		Cap:   verbs.QPCap{MaxSendWR: o.sqDepth, MaxRecvWR: 1024, MaxSendSGE: 4, MaxRecvSGE: 4, MaxInlineData: 256},
		Event: func(e verbs.AsyncEvent) { nd.events = append(nd.events, e) },
	})
	if err != nil {
		t.Fatal(err)
	}
	nd.qp = eng.(*QP)
	return nd
}

func (h *harness) connect(n, peer *node, o qpOpts) { connectQP(h.t, n, peer, o) }

// connectQP brings n's QP to RTS towards peer's.
func connectQP(t testing.TB, n, peer *node, o qpOpts) {
	qp := n.qp
	must := func(cur verbs.QPState, a verbs.QPAttr, m verbs.QPAttrMask) {
		t.Helper()
		if err := qp.Modify(cur, &a, m|verbs.AttrState); err != nil {
			t.Fatal(err)
		}
	}
	if o.qpType == verbs.QPTypeUD {
		must(verbs.QPSReset, verbs.QPAttr{State: verbs.QPSInit, QKey: o.qkey}, verbs.AttrQKey)
		must(verbs.QPSInit, verbs.QPAttr{State: verbs.QPSRTR}, 0)
		must(verbs.QPSRTR, verbs.QPAttr{State: verbs.QPSRTS, SQPSN: 1000}, verbs.AttrSQPSN)
		return
	}
	must(verbs.QPSReset, verbs.QPAttr{State: verbs.QPSInit, AccessFlags: o.access}, verbs.AttrAccessFlags)
	dgid := peer.addr
	if dgid.Is4() {
		dgid = netip.AddrFrom16(dgid.As16())
	}
	rtr := verbs.AttrAV | verbs.AttrPathMTU | verbs.AttrDestQPN | verbs.AttrRQPSN
	if o.qpType != verbs.QPTypeUC {
		rtr |= verbs.AttrMaxDestRdAtomic | verbs.AttrMinRNRTimer
	}
	must(verbs.QPSInit, verbs.QPAttr{State: verbs.QPSRTR, AV: verbs.AddressVector{DGID: dgid, DMAC: peer.mac, HopLimit: 64},
		PathMTU: o.mtu, DestQPN: peer.qp.QPN(), RQPSN: 1000, MaxDestRdAtomic: o.maxDestRdAtomic, MinRNRTimer: o.minRNRTimer}, rtr)
	if o.qpType == verbs.QPTypeUC {
		must(verbs.QPSRTR, verbs.QPAttr{State: verbs.QPSRTS, SQPSN: 1000}, verbs.AttrSQPSN)
		return
	}
	must(verbs.QPSRTR, verbs.QPAttr{State: verbs.QPSRTS, SQPSN: 1000, Timeout: o.timeout, RetryCnt: o.retryCnt,
		RNRRetry: o.rnrRetry, MaxRdAtomic: o.maxRdAtomic},
		verbs.AttrSQPSN|verbs.AttrTimeout|verbs.AttrRetryCnt|verbs.AttrRNRRetry|verbs.AttrMaxQPRdAtomic)
}

// run runs the virtual clock until nothing is pending or a minute of
// virtual time has passed.
func (h *harness) run() {
	limit := h.clk.Now() + time.Minute
	h.clk.Run(func() bool { return h.clk.Now() > limit })
}

// ah is an address vector towards n (UD).
func (n *node) ah() *verbs.AddressVector {
	return &verbs.AddressVector{DGID: netip.AddrFrom16(n.addr.As16()), DMAC: n.mac, HopLimit: 64}
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
	n.rq.q = append(n.rq.q, verbs.RecvWR{ID: id, SGL: []verbs.SGE{n.sge(off, length)}})
	n.qp.RecvPosted()
}

func fill(b []byte, seed byte) {
	for i := range b {
		b[i] = seed + byte(i*7)
	}
}

func wantWC(t testing.TB, got []verbs.WC, want ...verbs.WC) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d completions %v, want %d %v", len(got), got, len(want), want)
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
