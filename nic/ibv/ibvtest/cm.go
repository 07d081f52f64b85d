// rdma_cm (ibv.ConnManager): connect and accept with private data both
// ways, reject, data over the connection, and a disconnect from either
// side. The private data carries each side's buffer address and rkey, as
// real programs exchange them, and the data tests use what arrived.

package ibvtest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
)

// cmOf returns d's connection manager.
func cmOf(t *testing.T, d ibv.Device) ibv.ConnManager {
	t.Helper()
	cm, ok := d.(ibv.ConnManager)
	if !ok {
		t.Fatalf("device %s does not implement ibv.ConnManager", d.Name())
	}
	return cm
}

// cmContext bounds a test's CM calls.
func cmContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

// cmListen listens on a free port of cm: a random one, tried again if
// taken.
func cmListen(t *testing.T, cm ibv.ConnManager) ibv.CMListener {
	t.Helper()
	var err error
	for range 20 {
		port := uint16(20000 + rand.IntN(40000))
		var l ibv.CMListener
		if l, err = cm.CMListen(port); err == nil {
			if l.Port() != port {
				t.Fatalf("CMListen(%d) listens on port %d", port, l.Port())
			}
			cleanup(t, "close listener", l.Close)
			return l
		}
	}
	t.Fatalf("CMListen: %v", err)
	return nil
}

// remoteBuf is what a side's private data advertises: its buffer.
type remoteBuf struct {
	va   uint64
	rkey uint32
}

// advert is a side's private data: a tag, then its buffer's address and
// rkey (12 bytes, big-endian), within the 56 bytes a REQ carries.
func (s *side) advert(tag string) []byte {
	b := append([]byte(tag), make([]byte, 12)...)
	binary.BigEndian.PutUint64(b[len(tag):], s.va(0))
	binary.BigEndian.PutUint32(b[len(tag)+8:], s.mr.RKey())
	return b
}

// parseAdvert reads a peer's advert from the private data that arrived
// (which may be padded with zeros).
func parseAdvert(t *testing.T, what string, pd []byte, want []byte, tag string) remoteBuf {
	t.Helper()
	if !bytes.HasPrefix(pd, want) {
		t.Fatalf("%s: private data %x, want it to start with %x", what, pd, want)
	}
	return remoteBuf{va: binary.BigEndian.Uint64(pd[len(tag):]), rkey: binary.BigEndian.Uint32(pd[len(tag)+8:])}
}

// cmConn is an established connection: the RC QPs' sides, both ends'
// CMConns, and each side's view of the other's buffer.
type cmConn struct {
	c      *rc // c.pa, c.pb unused: the CM chose the paths
	ca, cb ibv.CMConn
	bufB   remoteBuf // what A learnt of B's buffer
	bufA   remoteBuf // what B learnt of A's buffer
}

const (
	reqTag = "ibvtest REQ"
	repTag = "ibvtest REP"
)

// cmConnect connects an RC QP of A (the active side) to one of B through
// B's listener l, checking what both sides see of the connection.
func cmConnect(t *testing.T, ctx context.Context, a, b *side, l ibv.CMListener) *cmConn {
	t.Helper()
	qa, qb := a.qp(verbs.QPTypeRC, verbs.QPCap{}, nil), b.qp(verbs.QPTypeRC, verbs.QPCap{}, nil)
	reqPD, repPD := a.advert(reqTag), b.advert(repTag)
	type accepted struct {
		conn ibv.CMConn
		req  ibv.CMRequest
		err  error
	}
	done := make(chan accepted, 1)
	actx, cancel := context.WithCancel(ctx) // ends the wait of a passive side no request reaches
	defer cancel()
	go func() {
		req, err := l.Accept(actx)
		if err != nil {
			done <- accepted{err: err}
			return
		}
		cn, err := req.Accept(ctx, qb, repPD, nil)
		done <- accepted{cn, req, err}
	}()
	ca, err := cmOf(t, a.dev).CMConnect(ctx, qa, b.addr, l.Port(), reqPD, &connectParam)
	if err != nil {
		cancel()
	}
	acc := <-done
	if err != nil || acc.err != nil {
		t.Fatalf("connect: active side %v, passive side %v", err, acc.err)
	}
	cb := acc.conn
	disconnectAtCleanup(t, ca)
	disconnectAtCleanup(t, cb)

	checkRequestParam(t, acc.req.Param(), a.iwarp)
	m := &cmConn{c: &rc{a: a, b: b, qa: qa, qb: qb}, ca: ca, cb: cb}
	m.bufA = parseAdvert(t, "the REQ's private data at the passive side", acc.req.PrivateData(), reqPD, reqTag)
	if got := parseAdvert(t, "the connection's private data at the passive side", cb.PrivateData(), reqPD, reqTag); got != m.bufA {
		t.Fatalf("the request's and the connection's private data differ")
	}
	m.bufB = parseAdvert(t, "the REP's private data at the active side", ca.PrivateData(), repPD, repTag)

	if ca.QP().QPN() != qa.QPN() || cb.QP().QPN() != qb.QPN() {
		t.Errorf("connections' QPs %#x, %#x; want the QPs given, %#x and %#x", ca.QP().QPN(), cb.QP().QPN(), qa.QPN(), qb.QPN())
	}
	// iWARP's MPA exchange carries no QP numbers; rdma_cm reports 0.
	if !a.iwarp && (ca.RemoteQPN() != qb.QPN() || cb.RemoteQPN() != qa.QPN()) {
		t.Errorf("remote QPNs %#x and %#x; want %#x and %#x", ca.RemoteQPN(), cb.RemoteQPN(), qb.QPN(), qa.QPN())
	}
	if qa.State() != verbs.QPSRTS || qb.State() != verbs.QPSRTS {
		t.Errorf("connected QPs in %v and %v, want RTS", qa.State(), qb.State())
	}
	srvAddr := netip.AddrPortFrom(b.addr.Unmap(), l.Port())
	for _, c := range []struct {
		what string
		got  netip.AddrPort
		want netip.AddrPort
	}{
		{"active side's RemoteAddr", unmapped(ca.RemoteAddr()), srvAddr},
		{"passive side's LocalAddr", unmapped(cb.LocalAddr()), srvAddr},
		{"request's LocalAddr", unmapped(acc.req.LocalAddr()), srvAddr},
		{"passive side's RemoteAddr", unmapped(cb.RemoteAddr()), unmapped(ca.LocalAddr())},
		{"request's RemoteAddr", unmapped(acc.req.RemoteAddr()), unmapped(ca.LocalAddr())},
	} {
		if c.got != c.want {
			t.Errorf("%s %v, want %v", c.what, c.got, c.want)
		}
	}
	// The active side's address is the CM's choice (the route's), one of
	// its device's.
	if _, err := a.dev.GIDIndex(ca.LocalAddr().Addr()); err != nil {
		t.Errorf("active side's LocalAddr %v is not an address of its device: %v", ca.LocalAddr(), err)
	}
	return m
}

// disconnectAtCleanup disconnects cn when the test ends.
func disconnectAtCleanup(t *testing.T, cn ibv.CMConn) {
	t.Cleanup(func() {
		dctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		cn.Disconnect(dctx) // an error only says the peer went first
	})
}

// connectParam is what cmConnect's active side asks for: IRD and ORD
// that differ, so that a request that reports them unswapped shows.
var connectParam = ibv.ConnParam{ResponderResources: 3, InitiatorDepth: 2, RetryCount: 6, RNRRetryCount: 5}

// checkRequestParam: the passive side sees the connector's initiator
// depth as its responder resources and the other way round (ib_cm and
// iw_cm report them so), and over RoCE the REQ's retry counts.
func checkRequestParam(t *testing.T, got ibv.ConnParam, iwarp bool) {
	t.Helper()
	want := ibv.ConnParam{ResponderResources: connectParam.InitiatorDepth, InitiatorDepth: connectParam.ResponderResources,
		RetryCount: connectParam.RetryCount, RNRRetryCount: connectParam.RNRRetryCount}
	if iwarp {
		want.RetryCount, want.RNRRetryCount = 0, 0 // MPA has none
	}
	if got != want {
		t.Errorf("the request's Param %+v, want %+v", got, want)
	}
}

// unmapped is ap with an IPv4-mapped address as IPv4.
func unmapped(ap netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

func testCMConnect(t *testing.T, p Pair) {
	a, b := newSides(t, p)
	ctx := cmContext(t)
	m := cmConnect(t, ctx, a, b, cmListen(t, cmOf(t, b.dev)))
	c := m.c

	// SEND both ways.
	sendOne(t, c, verbs.WRSend, 1000, 1, 0)
	sendOne(t, &rc{a: b, b: a, qa: c.qb, qb: c.qa}, verbs.WRSend, 500, 2, 0)

	// WRITE and READ at the buffer the peer advertised.
	const n = 3000
	fill(a.mem[srcOff:srcOff+n], 3)
	memset(b.mem[dstOff:dstOff+n], untouch)
	c.ready(t)
	a.postSend(c.qa, &verbs.SendWR{ID: 1, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
		SGL: []verbs.SGE{a.sge(srcOff, n)}, RemoteAddr: m.bufB.va + dstOff, RKey: m.bufB.rkey})
	checkWC(t, "write", waitOne(t, a.scq), 1, verbs.WCSuccess, verbs.WCRDMAWrite)
	c.done(t)
	checkBytes(t, "written data", b.mem[dstOff:dstOff+n], a.mem[srcOff:srcOff+n])

	fill(b.mem[srcOff:srcOff+n], 4)
	memset(a.mem[dstOff:dstOff+n], untouch)
	c.ready(t)
	a.postSend(c.qa, &verbs.SendWR{ID: 2, Opcode: verbs.WRRDMARead, Flags: verbs.SendSignaled,
		SGL: []verbs.SGE{a.sge(dstOff, n)}, RemoteAddr: m.bufB.va + srcOff, RKey: m.bufB.rkey})
	checkWC(t, "read", waitOne(t, a.scq), 2, verbs.WCSuccess, verbs.WCRDMARead)
	c.done(t) // B may reuse the memory read
	checkBytes(t, "read data", a.mem[dstOff:dstOff+n], b.mem[srcOff:srcOff+n])

	// And B WRITEs to A at the buffer the REQ advertised.
	fill(b.mem[srcOff:srcOff+n], 5)
	memset(a.mem[dstOff:dstOff+n], untouch)
	c.done(t) // A's memory is ready
	b.postSend(c.qb, &verbs.SendWR{ID: 3, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
		SGL: []verbs.SGE{b.sge(srcOff, n)}, RemoteAddr: m.bufA.va + dstOff, RKey: m.bufA.rkey})
	checkWC(t, "write back", waitOne(t, b.scq), 3, verbs.WCSuccess, verbs.WCRDMAWrite)
	c.ready(t) // B's WRITE is complete
	checkBytes(t, "data written back", a.mem[dstOff:dstOff+n], b.mem[srcOff:srcOff+n])
}

// testCMReject: a rejected request fails the connector's CMConnect (the
// peer's answer, not a timeout), its QP never reaches RTS, and the
// listener accepts the next request.
func testCMReject(t *testing.T, p Pair) {
	a, b := newSides(t, p)
	ctx := cmContext(t)
	l := cmListen(t, cmOf(t, b.dev))
	rejected := make(chan error, 1)
	go func() {
		req, err := l.Accept(ctx)
		if err == nil {
			err = req.Reject([]byte("ibvtest: no"))
		}
		rejected <- err
	}()
	qa := a.qp(verbs.QPTypeRC, verbs.QPCap{}, nil)
	cn, err := cmOf(t, a.dev).CMConnect(ctx, qa, b.addr, l.Port(), a.advert(reqTag), nil)
	if err == nil {
		t.Fatalf("CMConnect to a listener that rejects: connected (%v)", cn.RemoteAddr())
	}
	if !errors.Is(err, ibv.ErrRejected) {
		t.Fatalf("CMConnect to a listener that rejects: %v, want ibv.ErrRejected", err)
	}
	// A backend that reports the REJ must report the rejecter's: reason
	// consumer reject (IBTA table 112: 28), its private data first.
	var d ibv.RejectDetail
	if errors.As(err, &d) && (d.RejectReason() != 28 || !bytes.HasPrefix(d.RejectPrivateData(), []byte("ibvtest: no"))) {
		t.Fatalf("rejection's detail: reason %d, private data %q; want 28, \"ibvtest: no\"...", d.RejectReason(), d.RejectPrivateData())
	}
	if rerr := <-rejected; rerr != nil {
		t.Fatalf("passive side: %v", rerr)
	}
	if st := qa.State(); st == verbs.QPSRTR || st == verbs.QPSRTS {
		t.Fatalf("rejected QP in %v", st)
	}
	m := cmConnect(t, ctx, a, b, l)
	sendOne(t, m.c, verbs.WRSend, 64, 1, 0)
}

// testCMDisconnect: one side disconnects; the other's Done closes, both
// QPs are in ERR and a receive left posted is flushed.
func testCMDisconnect(t *testing.T, p Pair, active bool) {
	a, b := newSides(t, p)
	ctx := cmContext(t)
	m := cmConnect(t, ctx, a, b, cmListen(t, cmOf(t, b.dev)))
	sendOne(t, m.c, verbs.WRSend, 64, 1, 0)
	// A receive on each side, left for the flush.
	a.postRecv(m.c.qa, 40, dstOff, 64)
	b.postRecv(m.c.qb, 41, dstOff, 64)

	by, other := m.ca, m.cb
	if !active {
		by, other = m.cb, m.ca
	}
	if err := by.Disconnect(ctx); err != nil {
		t.Fatalf("Disconnect: %v", err)
	}
	for _, c := range []struct {
		what string
		conn ibv.CMConn
	}{{"the side that disconnected", by}, {"its peer", other}} {
		select {
		case <-c.conn.Done():
		case <-ctx.Done():
			t.Fatalf("%s: Done not closed after the disconnect", c.what)
		}
	}
	waitState(t, m.c.qa, verbs.QPSErr)
	waitState(t, m.c.qb, verbs.QPSErr)
	checkWC(t, "receive on the active side", waitOne(t, a.rcq), 40, verbs.WCWRFlushErr, 0)
	checkWC(t, "receive on the passive side", waitOne(t, b.rcq), 41, verbs.WCWRFlushErr, 0)
}
