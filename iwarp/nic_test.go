package iwarp_test

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/rnic/rnic/iwarp"
	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/transport/clock"
	"github.com/rnic/rnic/transport/stream/simstream"
)

// TestThroughNic drives the engine through nic, as an application would:
// Device, PD, MR, CQ, QP, RESET→INIT by Modify, then the connection
// manager, then verbs.
func TestThroughNic(t *testing.T) {
	clk := clock.NewVirtual()
	net := simstream.NewNetwork(clk, simstream.NetConfig{Conn: simstream.Config{Chop: 0.3, Seed: 1}})
	type side struct {
		stack *iwarp.Stack
		dev   *nic.Device
		qp    *nic.QP
		cq    *nic.CQ
		mr    *nic.MR
		buf   []byte
	}
	mk := func(addr string) *side {
		s := &side{}
		a := netip.MustParseAddr(addr)
		var err error
		s.stack, err = iwarp.NewStack(iwarp.Config{Clock: clk, Network: net, Addr: a})
		if err != nil {
			t.Fatal(err)
		}
		lim := nic.DefaultLimits()
		// nic's default max_sge_rd is 32 (bounded by MaxSGE); the nic
		// front ends of rnic set it to 1 for iWARP. The engine takes
		// up to max_send_sge READ sink SGEs: allow 4 here.
		lim.MaxSGERd = 4
		s.dev, err = nic.Open(nic.Config{GIDs: []netip.Addr{a}, Provider: s.stack, Limits: lim})
		if err != nil {
			t.Fatal(err)
		}
		pd, _ := s.dev.AllocPD()
		s.buf = make([]byte, 1<<16)
		s.mr, err = s.dev.RegMR(pd, s.buf, memory.LocalWrite|memory.RemoteWrite|memory.RemoteRead)
		if err != nil {
			t.Fatal(err)
		}
		s.cq, _ = s.dev.CreateCQ(64)
		s.qp, err = s.dev.CreateQP(pd, nic.QPInit{Type: verbs.QPTypeRC, SendCQ: s.cq, RecvCQ: s.cq,
			Cap: verbs.QPCap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 4, MaxRecvSGE: 1}})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.qp.Modify(&verbs.QPAttr{State: verbs.QPSInit, PortNum: 1, AccessFlags: memory.RemoteWrite | memory.RemoteRead},
			verbs.AttrState|verbs.AttrPKeyIndex|verbs.AttrPort|verbs.AttrAccessFlags); err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b := mk("10.0.0.1"), mk("10.0.0.2")
	l, err := b.stack.Listen(netip.MustParseAddrPort("10.0.0.2:5000"), func(r *iwarp.ConnRequest) {
		if err := r.Accept(b.qp.QPN(), nil, 4, 4); err != nil {
			t.Error(err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var res *iwarp.ConnectResult
	a.stack.Connect(a.qp.QPN(), l.Addr(), nil, 4, 4, func(r iwarp.ConnectResult) { res = &r })
	clk.RunFor(time.Second)
	if res == nil || res.Err != nil || a.qp.State() != verbs.QPSRTS || b.qp.State() != verbs.QPSRTS {
		t.Fatalf("connect %+v, states %v %v", res, a.qp.State(), b.qp.State())
	}
	copy(a.buf, "through nic")
	if err := b.qp.PostRecv(&verbs.RecvWR{ID: 7, SGL: []verbs.SGE{{Addr: b.mr.Addr() + 100, Length: 100, LKey: b.mr.LKey()}}}); err != nil {
		t.Fatal(err)
	}
	if err := a.qp.PostSend(&verbs.SendWR{ID: 1, Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
		SGL: []verbs.SGE{{Addr: a.mr.Addr(), Length: 11, LKey: a.mr.LKey()}}}); err != nil {
		t.Fatal(err)
	}
	if err := a.qp.PostSend(&verbs.SendWR{ID: 2, Opcode: verbs.WRRDMARead, Flags: verbs.SendSignaled,
		SGL: []verbs.SGE{{Addr: a.mr.Addr() + 200, Length: 11, LKey: a.mr.LKey()}}, RemoteAddr: b.mr.Addr() + 100, RKey: b.mr.RKey()}); err != nil {
		t.Fatal(err)
	}
	clk.RunFor(time.Second)
	wcs := make([]verbs.WC, 8)
	if n := a.cq.Poll(wcs); n != 2 || wcs[0].Status != verbs.WCSuccess || wcs[1].Status != verbs.WCSuccess {
		t.Fatalf("A: %d %+v", n, wcs[:n])
	}
	if n := b.cq.Poll(wcs); n != 1 || wcs[0].WRID != 7 || wcs[0].ByteLen != 11 {
		t.Fatalf("B: %d %+v", n, wcs[:n])
	}
	if !bytes.Equal(a.buf[200:211], []byte("through nic")) {
		t.Fatalf("read back %q", a.buf[200:211])
	}
	// A READ into two sink SGEs: two Read Requests, one completion.
	if err := a.qp.PostSend(&verbs.SendWR{ID: 3, Opcode: verbs.WRRDMARead, Flags: verbs.SendSignaled, SGL: []verbs.SGE{
		{Addr: a.mr.Addr() + 300, Length: 4, LKey: a.mr.LKey()}, {Addr: a.mr.Addr() + 400, Length: 7, LKey: a.mr.LKey()}},
		RemoteAddr: b.mr.Addr() + 100, RKey: b.mr.RKey()}); err != nil {
		t.Fatal(err)
	}
	clk.RunFor(time.Second)
	if n := a.cq.Poll(wcs); n != 1 || wcs[0].WRID != 3 || wcs[0].Status != verbs.WCSuccess || wcs[0].ByteLen != 11 {
		t.Fatalf("A: %d %+v", n, wcs[:n])
	}
	if string(a.buf[300:304])+string(a.buf[400:407]) != "through nic" {
		t.Fatalf("read back %q %q", a.buf[300:304], a.buf[400:407])
	}
	// More than max_sge_rd: nic refuses it.
	sgl := make([]verbs.SGE, 5)
	for i := range sgl {
		sgl[i] = verbs.SGE{Addr: a.mr.Addr() + uint64(i), Length: 1, LKey: a.mr.LKey()}
	}
	if err := a.qp.PostSend(&verbs.SendWR{ID: 4, Opcode: verbs.WRRDMARead, SGL: sgl, RKey: b.mr.RKey()}); err == nil {
		t.Fatal("five-SGE READ accepted")
	}
	// Disconnect: both QPs to ERR, nic flushes later receives.
	if err := a.stack.Disconnect(a.qp.QPN()); err != nil {
		t.Fatal(err)
	}
	clk.RunFor(time.Second)
	if a.qp.State() != verbs.QPSErr || b.qp.State() != verbs.QPSErr {
		t.Fatalf("states %v %v", a.qp.State(), b.qp.State())
	}
	if err := a.qp.Destroy(); err != nil {
		t.Fatal(err)
	}
}
