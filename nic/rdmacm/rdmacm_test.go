package rdmacm

import (
	"bytes"
	"context"
	"errors"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce/cm"
	"github.com/rnic/rnic/transport"
)

var (
	addrA = netip.MustParseAddr("10.0.0.1")
	addrB = netip.MustParseAddr("10.0.0.2")
)

// lossy drops the frames its filter picks (the CM's retry tests).
type lossy struct {
	transport.Endpoint
	drop func([]byte) bool
}

func (l *lossy) Send(f []byte) error {
	if l.drop != nil && l.drop(f) {
		return nil
	}
	return l.Endpoint.Send(f)
}

// attrOf returns the CM attribute of a GSI frame (IPv4, no VLAN), or 0.
func attrOf(f []byte) cm.AttrID {
	const mad = 14 + 20 + 8 + 12 + 8
	if len(f) < mad+cm.MADLen || f[14+20+8+5] != 0 || f[14+20+8+7] != 1 {
		return 0
	}
	return cm.AttrID(uint16(f[mad+16])<<8 | uint16(f[mad+17]))
}

type side struct {
	n   *embedded.NIC
	cm  *CM
	pd  *nic.PD
	cq  *nic.CQ
	mem *memory.Shared
	mr  *nic.MR
}

func newPair(t *testing.T, dropA, dropB func([]byte) bool) (a, b *side) {
	t.Helper()
	pa, pb := transport.NewPipe()
	cfg := Config{ResponseTimeout: 14, PacketLifeTime: 10, MaxRetries: 4, TimeWait: 50 * time.Millisecond}
	mk := func(name string, ep transport.Endpoint, addr, peer netip.Addr) *side {
		n, err := embedded.Open(embedded.UDPConfig{Name: name, Addr: addr, Link: ep})
		if err != nil {
			t.Fatal(err)
		}
		c, err := New(n, cfg)
		if err != nil {
			t.Fatal(err)
		}
		s := &side{n: n, cm: c}
		if s.pd, err = n.AllocPD(); err != nil {
			t.Fatal(err)
		}
		if s.cq, err = n.CreateCQ(64); err != nil {
			t.Fatal(err)
		}
		if s.mem, err = memory.NewShared(4096); err != nil {
			t.Fatal(err)
		}
		if s.mr, err = n.RegMRShared(s.pd, s.mem, 0, 4096, memory.LocalWrite|memory.RemoteWrite|memory.RemoteRead); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(); n.Close(); s.mem.Close() })
		return s
	}
	a = mk("rnic0", &lossy{pa, dropA}, addrA, addrB)
	b = mk("rnic1", &lossy{pb, dropB}, addrB, addrA)
	return a, b
}

func (s *side) qp(t *testing.T) *nic.QP {
	t.Helper()
	qp, err := s.n.CreateQP(s.pd, nic.QPInit{Type: verbs.QPTypeRC, SendCQ: s.cq, RecvCQ: s.cq,
		Cap: verbs.QPCap{MaxSendWR: 8, MaxRecvWR: 8, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		t.Fatal(err)
	}
	return qp
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// connect runs a server on b (Accept) and a client on a (Connect).
func connect(t *testing.T, a, b *side, pd []byte) (ca, cb *Conn) {
	t.Helper()
	ctx := ctxT(t)
	l, err := b.cm.Listen(7174)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var wg sync.WaitGroup
	var serr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		r, err := l.Accept(ctx)
		if err != nil {
			serr = err
			return
		}
		if !bytes.HasPrefix(r.PrivateData(), pd) || len(r.PrivateData()) != cm.MaxREQUserData {
			serr = errors.New("REQ private data differs")
		}
		cb, serr = r.Accept(ctx, b.qp(t), []byte("server says hi"), nil)
	}()
	ca, err = a.cm.Connect(ctx, a.qp(t), addrB, 7174, pd, nil)
	wg.Wait()
	if err != nil || serr != nil {
		t.Fatalf("connect: client %v, server %v", err, serr)
	}
	return ca, cb
}

// TestConnectSendDisconnect: REQ/REP/RTU connect two RC QPs (both in RTS,
// each aimed at the other), the private data of both directions arrives,
// a SEND crosses the connection, and DREQ/DREP take both down.
func TestConnectSendDisconnect(t *testing.T) {
	a, b := newPair(t, nil, nil)
	ca, cb := connect(t, a, b, []byte("client hello"))
	if ca.QP().State() != verbs.QPSRTS || cb.QP().State() != verbs.QPSRTS {
		t.Fatalf("states %v %v, want RTS", ca.QP().State(), cb.QP().State())
	}
	if ca.RemoteQPN() != cb.QP().QPN() || cb.RemoteQPN() != ca.QP().QPN() {
		t.Fatalf("QPNs crossed wrong: %#x/%#x vs %#x/%#x", ca.RemoteQPN(), cb.QP().QPN(), cb.RemoteQPN(), ca.QP().QPN())
	}
	if !bytes.HasPrefix(ca.PrivateData(), []byte("server says hi")) || len(ca.PrivateData()) != cm.REPPrivateDataLen {
		t.Fatalf("REP private data %q", ca.PrivateData())
	}
	if cb.RemoteAddr().Addr() != addrA || cb.LocalAddr() != netip.AddrPortFrom(addrB, 7174) {
		t.Fatalf("server sees %v -> %v", cb.RemoteAddr(), cb.LocalAddr())
	}
	// A SEND over the connected QPs.
	copy(a.mem.Bytes(), "ping over a CM-connected QP")
	if err := cb.QP().PostRecv(&verbs.RecvWR{ID: 1, SGL: []verbs.SGE{{Addr: b.mr.Addr(), Length: 64, LKey: b.mr.LKey()}}}); err != nil {
		t.Fatal(err)
	}
	if err := ca.QP().PostSend(&verbs.SendWR{ID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
		SGL: []verbs.SGE{{Addr: a.mr.Addr(), Length: 27, LKey: a.mr.LKey()}}}); err != nil {
		t.Fatal(err)
	}
	waitWC(t, b.cq, 1)
	waitWC(t, a.cq, 2)
	if !bytes.Equal(b.mem.Bytes()[:27], a.mem.Bytes()[:27]) {
		t.Fatal("SEND payload differs")
	}
	if err := ca.Disconnect(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-cb.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("server never saw the DREQ")
	}
	if ca.QP().State() != verbs.QPSErr || cb.QP().State() != verbs.QPSErr {
		t.Fatalf("after disconnect: %v %v, want ERR", ca.QP().State(), cb.QP().State())
	}
}

func waitWC(t *testing.T, cq *nic.CQ, id uint64) {
	t.Helper()
	wc := make([]verbs.WC, 1)
	for deadline := time.Now().Add(5 * time.Second); ; {
		if cq.Poll(wc) == 1 {
			if wc[0].WRID != id || wc[0].Status != verbs.WCSuccess {
				t.Fatalf("completion %+v, want wr %d success", wc[0], id)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no completion for wr %d", id)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// TestReject: the server's Reject reaches the client as a REJ with reason
// 28 (consumer reject) and the server's private data; the client QP never
// reaches RTR.
func TestReject(t *testing.T) {
	a, b := newPair(t, nil, nil)
	ctx := ctxT(t)
	l, _ := b.cm.Listen(7174)
	go func() {
		if r, err := l.Accept(ctx); err == nil {
			r.Reject([]byte("go away"))
		}
	}()
	qp := a.qp(t)
	_, err := a.cm.Connect(ctx, qp, addrB, 7174, nil, nil)
	var rej *RejectError
	if !errors.As(err, &rej) || rej.Reason != cm.RejConsumerReject || !bytes.HasPrefix(rej.PrivateData, []byte("go away")) {
		t.Fatalf("Connect: %v, want a consumer REJ with private data", err)
	}
	if qp.State() != verbs.QPSInit {
		t.Fatalf("rejected QP in %v", qp.State())
	}
}

// TestNoListener: a REQ for a port nobody listens on is rejected with
// "invalid service ID" (8), as Linux's CM does.
func TestNoListener(t *testing.T) {
	a, _ := newPair(t, nil, nil)
	_, err := a.cm.Connect(ctxT(t), a.qp(t), addrB, 9999, nil, nil)
	var rej *RejectError
	if !errors.As(err, &rej) || rej.Reason != cm.RejInvalidServiceID {
		t.Fatalf("Connect: %v, want REJ invalid service ID", err)
	}
}

// TestLostREQAndREP: the first REQ and the first REP are lost; the CM's
// timers send them again and the connection still comes up.
func TestLostREQAndREP(t *testing.T) {
	var reqs, reps atomic.Int32
	dropA := func(f []byte) bool { return attrOf(f) == cm.AttrREQ && reqs.Add(1) == 1 }
	dropB := func(f []byte) bool { return attrOf(f) == cm.AttrREP && reps.Add(1) == 1 }
	a, b := newPair(t, dropA, dropB)
	connect(t, a, b, []byte("x"))
	if reqs.Load() < 2 || reps.Load() < 2 {
		t.Fatalf("REQs sent %d, REPs %d: want retransmissions", reqs.Load(), reps.Load())
	}
	if a.cm.Manager().Counters().Retransmits == 0 || b.cm.Manager().Counters().Retransmits == 0 {
		t.Fatalf("retransmit counters: %+v %+v", a.cm.Manager().Counters(), b.cm.Manager().Counters())
	}
}

// TestLostRTU: the RTU is lost; the passive side's REP retry draws a
// duplicate REP, which the active side answers with the RTU again.
func TestLostRTU(t *testing.T) {
	var rtus atomic.Int32
	dropA := func(f []byte) bool { return attrOf(f) == cm.AttrRTU && rtus.Add(1) == 1 }
	a, b := newPair(t, dropA, nil)
	connect(t, a, b, nil)
	if rtus.Load() < 2 {
		t.Fatalf("RTUs sent %d, want 2", rtus.Load())
	}
}

// TestTimeout: a peer that never answers gives ErrTimeout after the
// retries (REQ sent 1 + MaxRetries times).
func TestTimeout(t *testing.T) {
	var reqs atomic.Int32
	dropA := func(f []byte) bool { return attrOf(f) == cm.AttrREQ && reqs.Add(1) > 0 }
	a, _ := newPair(t, dropA, nil)
	_, err := a.cm.Connect(ctxT(t), a.qp(t), addrB, 7174, nil, nil)
	if !errors.Is(err, ErrTimeout) || reqs.Load() != 5 {
		t.Fatalf("Connect: %v after %d REQs, want ErrTimeout after 5", err, reqs.Load())
	}
}

// TestServerDisconnect: the passive side disconnects; the active side's
// Done closes and its QP goes to ERR.
func TestServerDisconnect(t *testing.T) {
	a, b := newPair(t, nil, nil)
	ca, cb := connect(t, a, b, nil)
	if err := cb.Disconnect(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ca.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("client never saw the DREQ")
	}
	if err := ca.Disconnect(ctxT(t)); err != nil {
		t.Fatalf("Disconnect after the peer's: %v", err)
	}
}

// TestPSNsAsLinux: each side's Starting PSN is the PSN it expects to
// receive, as Linux's ib_cm and rdma_cm use it (rxe-rping.pcap: the
// client's first SEND carries the REP's Starting PSN, the server's first
// packet the REQ's). An rnic that started its send queue at its own
// Starting PSN is NAKed by rxe with "PSN sequence error".
func TestPSNsAsLinux(t *testing.T) {
	const bth = 14 + 20 + 8
	var mu sync.Mutex
	var reqPSN, repPSN, firstA, firstB int64 = -1, -1, -1, -1
	watch := func(first *int64) func([]byte) bool {
		return func(f []byte) bool {
			if len(f) < bth+12 {
				return false
			}
			mu.Lock()
			defer mu.Unlock()
			psn := int64(f[bth+9])<<16 | int64(f[bth+10])<<8 | int64(f[bth+11])
			switch attrOf(f) {
			case cm.AttrREQ, cm.AttrREP:
				m, err := cm.ParseMAD(f[bth+12+8:])
				if err != nil {
					t.Errorf("MAD: %v", err)
					return false
				}
				if attrOf(f) == cm.AttrREQ {
					var r cm.REQ
					r.Decode(m)
					reqPSN = int64(r.StartingPSN)
				} else {
					var r cm.REP
					r.Decode(m)
					repPSN = int64(r.StartingPSN)
				}
			case 0:
				if f[bth] == 4 && *first < 0 { // RC SEND Only
					*first = psn
				}
			}
			return false
		}
	}
	a, b := newPair(t, watch(&firstA), watch(&firstB))
	ca, cb := connect(t, a, b, nil)
	// One SEND each way.
	for _, d := range []struct {
		from, to *Conn
		fs, ts   *side
	}{{ca, cb, a, b}, {cb, ca, b, a}} {
		if err := d.to.QP().PostRecv(&verbs.RecvWR{ID: 1, SGL: []verbs.SGE{{Addr: d.ts.mr.Addr(), Length: 64, LKey: d.ts.mr.LKey()}}}); err != nil {
			t.Fatal(err)
		}
		if err := d.from.QP().PostSend(&verbs.SendWR{ID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
			SGL: []verbs.SGE{{Addr: d.fs.mr.Addr(), Length: 8, LKey: d.fs.mr.LKey()}}}); err != nil {
			t.Fatal(err)
		}
		waitWC(t, d.ts.cq, 1)
		waitWC(t, d.fs.cq, 2)
	}
	mu.Lock()
	defer mu.Unlock()
	if reqPSN < 0 || repPSN < 0 || firstA != repPSN || firstB != reqPSN {
		t.Fatalf("REQ PSN %#x, REP PSN %#x; client's first SEND %#x (want the REP's), server's %#x (want the REQ's)",
			reqPSN, repPSN, firstA, firstB)
	}
}

// TestLostDREPs: every DREP is lost, so the DREQ is never answered. As
// ib_cm's DREQ timeout (rdma_cm's DISCONNECTED with ETIMEDOUT), the
// connection ends as disconnected once the retries run out: Disconnect
// returns nil in bounded time, Done is closed and the QP is in ERR.
func TestLostDREPs(t *testing.T) {
	var dreqs, dreps atomic.Int32
	dropA := func(f []byte) bool {
		if attrOf(f) == cm.AttrDREQ {
			dreqs.Add(1)
		}
		return false
	}
	dropB := func(f []byte) bool { return attrOf(f) == cm.AttrDREP && dreps.Add(1) > 0 }
	a, b := newPair(t, dropA, dropB)
	ca, cb := connect(t, a, b, nil)
	start := time.Now()
	if err := ca.Disconnect(ctxT(t)); err != nil {
		t.Fatalf("Disconnect with every DREP lost: %v", err)
	}
	select {
	case <-ca.Done():
	default:
		t.Fatal("Disconnect returned but Done is open")
	}
	<-cb.Done()
	if ca.QP().State() != verbs.QPSErr {
		t.Fatalf("client QP in %v, want ERR", ca.QP().State())
	}
	if dreqs.Load() != 5 || dreps.Load() == 0 {
		t.Fatalf("%d DREQs, %d DREPs lost: want 5 DREQs (1 + MaxRetries), each answered", dreqs.Load(), dreps.Load())
	}
	if c := a.cm.Manager().Counters(); c.Timeouts != 1 {
		t.Fatalf("client CM counters %+v: want the DREQ's timeout counted", c)
	}
	t.Logf("Disconnect returned after %v", time.Since(start))
}
