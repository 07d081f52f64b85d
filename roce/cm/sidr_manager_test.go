package cm

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/rnic/rnic/transport/clock"
)

// sidrPair links a client Manager a and a server Manager b (with onSIDR)
// through the virtual clock.
func sidrPair(t *testing.T, onSIDR func(*SIDRRequest, *SIDRREQ) bool) (clk *clock.Virtual, ma, mb *Manager, pa, pb *fakePort) {
	clk = clock.NewVirtual()
	a, b := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	pa = &fakePort{clk: clk, self: a, peer: &mb}
	pb = &fakePort{clk: clk, self: b, peer: &ma}
	var err error
	if ma, err = New(Config{Port: pa, Clock: clk, GUID: 1, ResponseTimeout: 14, PacketLifeTime: 10, MaxRetries: 3}); err != nil {
		t.Fatal(err)
	}
	if mb, err = New(Config{Port: pb, Clock: clk, GUID: 2, ResponseTimeout: 14, PacketLifeTime: 10, MaxRetries: 3,
		OnSIDR: onSIDR}); err != nil {
		t.Fatal(err)
	}
	return clk, ma, mb, pa, pb
}

// TestSIDRResolve: the server sees the ServiceID and private data, its
// QPN, Q_Key and private data reach the client's callback, once.
func TestSIDRResolve(t *testing.T) {
	svc := ServiceID(PortSpaceUDP, 7174)
	var offered int
	clk, ma, _, pa, pb := sidrPair(t, func(r *SIDRRequest, req *SIDRREQ) bool {
		offered++
		if req.ServiceID != svc || !bytes.HasPrefix(req.PrivateData, []byte("hello")) {
			t.Errorf("SIDR_REQ %#x %q", req.ServiceID, req.PrivateData[:8])
		}
		if p, _ := r.Peer(); p != netip.MustParseAddr("10.0.0.1") {
			t.Errorf("peer %v", p)
		}
		if err := r.Reply(SIDRREP{Status: SIDRValid, QPN: 0x123, QKey: 0x01234567, PrivateData: []byte("ok")}); err != nil {
			t.Error(err)
		}
		if r.Reply(SIDRREP{}) != ErrState {
			t.Error("second Reply accepted")
		}
		return true
	})
	var got []SIDRResult
	_, err := ma.Resolve(netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("10.0.0.1"),
		SIDRREQ{PKey: 0xFFFF, ServiceID: svc, PrivateData: []byte("hello")}, func(r SIDRResult) { got = append(got, r) })
	if err != nil {
		t.Fatal(err)
	}
	clk.RunFor(time.Second)
	if offered != 1 || len(got) != 1 || got[0].TimedOut || got[0].Status != SIDRValid || got[0].QPN != 0x123 ||
		got[0].QKey != 0x01234567 || !bytes.HasPrefix(got[0].PrivateData, []byte("ok")) {
		t.Fatalf("offered %d, results %+v", offered, got)
	}
	if pa.count(AttrSIDRREQ) != 1 || pb.count(AttrSIDRREP) != 1 || len(ma.sidrOut) != 0 {
		t.Fatalf("REQs %d REPs %d outstanding %d", pa.count(AttrSIDRREQ), pb.count(AttrSIDRREP), len(ma.sidrOut))
	}
}

// TestSIDRNoListener: without a taker the answer is "service ID not
// supported" (what rdma_cm turns into UNREACHABLE).
func TestSIDRNoListener(t *testing.T) {
	clk, ma, _, _, _ := sidrPair(t, func(*SIDRRequest, *SIDRREQ) bool { return false })
	var got []SIDRResult
	ma.Resolve(netip.MustParseAddr("10.0.0.2"), netip.Addr{}, SIDRREQ{ServiceID: 1}, func(r SIDRResult) { got = append(got, r) })
	clk.RunFor(time.Second)
	if len(got) != 1 || got[0].Status != SIDRUnsupported || got[0].TimedOut {
		t.Fatalf("results %+v", got)
	}
}

// TestSIDRLostREP: the first SIDR_REP is lost; the retried SIDR_REQ is
// answered from the request table with the same SIDR_REP, and the
// consumer is not offered the request twice; the table forgets it after
// the client's retries are over.
func TestSIDRLostREP(t *testing.T) {
	var offered int
	clk, ma, mb, pa, pb := sidrPair(t, func(r *SIDRRequest, req *SIDRREQ) bool {
		offered++
		r.Reply(SIDRREP{QPN: 77, QKey: 5})
		return true
	})
	n := 0
	pb.drop = func(a AttrID) bool { n++; return a == AttrSIDRREP && n == 1 }
	var got []SIDRResult
	ma.Resolve(netip.MustParseAddr("10.0.0.2"), netip.Addr{}, SIDRREQ{ServiceID: 1}, func(r SIDRResult) { got = append(got, r) })
	clk.RunFor(2 * ma.retryTimeout(14))
	if offered != 1 || pa.count(AttrSIDRREQ) != 2 || pb.count(AttrSIDRREP) != 2 || len(got) != 1 || got[0].QPN != 77 {
		t.Fatalf("offered %d REQs %d REPs %d results %+v", offered, pa.count(AttrSIDRREQ), pb.count(AttrSIDRREP), got)
	}
	if mb.Counters().DuplicateREQs != 1 {
		t.Fatalf("counters %+v", mb.Counters())
	}
	clk.RunFor(mb.sidrKeep())
	if len(mb.sidrIn) != 0 {
		t.Fatalf("%d answered requests kept after TimeWait", len(mb.sidrIn))
	}
}

// TestSIDRTimeout: with every SIDR_REQ lost the client sends it 1 +
// MaxRetries times, each a retry timeout apart, then reports a timeout.
func TestSIDRTimeout(t *testing.T) {
	clk, ma, _, pa, _ := sidrPair(t, nil)
	pa.drop = func(a AttrID) bool { return true }
	var got []SIDRResult
	ma.Resolve(netip.MustParseAddr("10.0.0.2"), netip.Addr{}, SIDRREQ{ServiceID: 1}, func(r SIDRResult) { got = append(got, r) })
	wait := ma.retryTimeout(14)
	clk.RunFor(4*wait - wait/2)
	if len(got) != 0 || pa.count(AttrSIDRREQ) != 4 {
		t.Fatalf("early: results %+v, REQs %d", got, pa.count(AttrSIDRREQ))
	}
	clk.RunFor(wait)
	if len(got) != 1 || !got[0].TimedOut || pa.count(AttrSIDRREQ) != 4 || ma.Counters().Timeouts != 1 || len(ma.sidrOut) != 0 {
		t.Fatalf("results %+v, REQs %d, counters %+v", got, pa.count(AttrSIDRREQ), ma.Counters())
	}
}

// TestSIDRStrayREP: a SIDR_REP for no outstanding request, or from
// another address than the request went to, is counted and ignored.
func TestSIDRStrayREP(t *testing.T) {
	_, ma, _, _, _ := sidrPair(t, nil)
	var got []SIDRResult
	q, _ := ma.Resolve(netip.MustParseAddr("10.0.0.2"), netip.Addr{}, SIDRREQ{ServiceID: 1}, func(r SIDRResult) { got = append(got, r) })
	b := make(MAD, MADLen)
	(&SIDRREP{RequestID: q.reqID ^ 1}).Encode(b, 1)
	ma.Deliver(netip.MustParseAddr("10.0.0.2"), netip.Addr{}, b)
	(&SIDRREP{RequestID: q.reqID}).Encode(b, 1)
	ma.Deliver(netip.MustParseAddr("10.0.0.3"), netip.Addr{}, b)
	if len(got) != 0 || ma.Counters().UnknownComm != 2 {
		t.Fatalf("results %+v counters %+v", got, ma.Counters())
	}
	ma.Deliver(netip.MustParseAddr("10.0.0.2"), netip.Addr{}, b)
	if len(got) != 1 {
		t.Fatalf("the right SIDR_REP did not end the query: %+v", got)
	}
}

// TestSIDRTableBounded: a peer's flood of distinct SIDR_REQs fills the
// request table to its bound; further ones are dropped and counted, not
// offered.
func TestSIDRTableBounded(t *testing.T) {
	offered := 0
	_, _, mb, _, _ := sidrPair(t, func(*SIDRRequest, *SIDRREQ) bool { offered++; return true })
	b := make(MAD, MADLen)
	for i := range maxSIDRRequests + 10 {
		(&SIDRREQ{RequestID: uint32(i), ServiceID: 1}).Encode(b, uint64(i))
		mb.Deliver(netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2"), b)
	}
	if offered != maxSIDRRequests || len(mb.sidrIn) != maxSIDRRequests || mb.Counters().DroppedMADs != 10 {
		t.Fatalf("offered %d, table %d, counters %+v", offered, len(mb.sidrIn), mb.Counters())
	}
}
