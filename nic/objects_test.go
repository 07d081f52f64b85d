package nic

import (
	"errors"
	"net/netip"
	"testing"
	"unsafe"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
)

func TestPDBusy(t *testing.T) {
	f := newFixture(t)
	pd, err := f.d.AllocPD()
	wantIs(t, "AllocPD", err, nil)
	if pd.ID() == 0 || pd.ID() == f.pd.ID() {
		t.Fatalf("PD ids %d %d", pd.ID(), f.pd.ID())
	}
	mr, err := f.d.RegMR(pd, make([]byte, 16), 0)
	wantIs(t, "RegMR", err, nil)
	q, err := f.d.CreateQP(pd, QPInit{Type: verbs.QPTypeUD, SendCQ: f.cq, RecvCQ: f.cq})
	wantIs(t, "CreateQP", err, nil)
	ah, err := f.d.CreateAH(pd, goodAV())
	wantIs(t, "CreateAH", err, nil)
	srq, err := f.d.CreateSRQ(pd, 1, 1)
	wantIs(t, "CreateSRQ", err, nil)

	for _, release := range []func() error{
		func() error { return f.d.DeregMR(mr) },
		q.Destroy,
		ah.Destroy,
		srq.Destroy,
	} {
		wantIs(t, "DeallocPD while used", f.d.DeallocPD(pd), verbs.ErrBusy)
		wantIs(t, "release", release(), nil)
	}
	wantIs(t, "DeallocPD", f.d.DeallocPD(pd), nil)
	wantIs(t, "DeallocPD twice", f.d.DeallocPD(pd), verbs.ErrDestroyed)
	_, err = f.d.RegMR(pd, make([]byte, 16), 0)
	wantIs(t, "RegMR on a deallocated PD", err, verbs.ErrDestroyed)
	_, err = f.d.CreateAH(pd, goodAV())
	wantIs(t, "CreateAH on a deallocated PD", err, verbs.ErrDestroyed)

	other, _ := Open(Config{})
	wantIs(t, "DeallocPD of another device", other.DeallocPD(f.pd), verbs.ErrInvalid)
	wantIs(t, "DeallocPD(nil)", f.d.DeallocPD(nil), verbs.ErrInvalid)
}

func TestMR(t *testing.T) {
	f := newFixture(t)
	buf := make([]byte, 4096)
	mr, err := f.d.RegMR(f.pd, buf, memory.LocalWrite|memory.RemoteRead)
	wantIs(t, "RegMR", err, nil)
	if mr.Addr() != uint64(uintptr(unsafe.Pointer(&buf[0]))) || mr.Len() != 4096 || mr.LKey() != mr.RKey() || mr.PD() != f.pd {
		t.Errorf("MR addr %#x len %d keys %#x %#x", mr.Addr(), mr.Len(), mr.LKey(), mr.RKey())
	}
	if mr.Access() != memory.LocalWrite|memory.RemoteRead || mr.Region() == nil {
		t.Error("access")
	}
	// The key works through the device's memory table.
	ref, fault := f.d.Memory().CheckLocal(f.pd.ID(), mr.LKey(), mr.Addr()+10, 10, memory.LocalWrite)
	if fault != memory.Ok {
		t.Fatalf("CheckLocal: %v", fault)
	}
	ref.Release()

	zb, err := f.d.RegMR(f.pd, buf, memory.ZeroBased)
	wantIs(t, "zero-based", err, nil)
	if zb.Addr() != 0 {
		t.Errorf("zero-based addr %#x", zb.Addr())
	}
	iv, err := f.d.RegMRIOVA(f.pd, buf[:100], 0x10000, 0)
	wantIs(t, "RegMRIOVA", err, nil)
	if iv.Addr() != 0x10000 {
		t.Errorf("iova %#x", iv.Addr())
	}

	_, err = f.d.RegMR(f.pd, buf, memory.RemoteWrite) // needs LocalWrite
	wantIs(t, "RemoteWrite without LocalWrite", err, verbs.ErrInvalid)
	if !errors.Is(err, memory.ErrInvalidAccess) {
		t.Errorf("memory's error not kept: %v", err)
	}
	_, err = f.d.RegMR(f.pd, nil, 0)
	wantIs(t, "empty MR", err, verbs.ErrInvalid)
	_, err = f.d.RegMR(nil, buf, 0)
	wantIs(t, "nil PD", err, verbs.ErrInvalid)

	wantIs(t, "DeregMR", f.d.DeregMR(mr), nil)
	wantIs(t, "DeregMR twice", f.d.DeregMR(mr), verbs.ErrDestroyed)
	if _, fault := f.d.Memory().CheckLocal(f.pd.ID(), mr.LKey(), mr.Addr(), 1, 0); fault == memory.Ok {
		t.Error("deregistered key still resolves")
	}
	wantIs(t, "DeregMR(nil)", f.d.DeregMR(nil), verbs.ErrInvalid)
}

func TestFastMR(t *testing.T) {
	f := newFixture(t)
	mr, err := f.d.AllocFastMR(f.pd)
	wantIs(t, "AllocFastMR", err, nil)
	buf := make([]byte, 64)
	key, err := f.d.FastRegMR(mr, buf, 0x5000, memory.LocalWrite|memory.RemoteWrite)
	wantIs(t, "FastRegMR", err, nil)
	if mr.LKey() != key || mr.Addr() != 0x5000 {
		t.Errorf("key %#x lkey %#x addr %#x", key, mr.LKey(), mr.Addr())
	}
	_, err = f.d.FastRegMR(mr, buf, 0, 0)
	wantIs(t, "FastRegMR while valid", err, verbs.ErrBusy)
	if fault := f.d.Memory().Invalidate(f.pd.ID(), 0, key); fault != memory.Ok {
		t.Fatalf("Invalidate: %v", fault)
	}
	key2, err := f.d.FastRegMR(mr, buf, 0, 0)
	wantIs(t, "FastRegMR after invalidate", err, nil)
	if key2 == key {
		t.Error("same key after re-registration")
	}
	wantIs(t, "DeregMR", f.d.DeregMR(mr), nil)
	_, err = f.d.FastRegMR(mr, buf, 0, 0)
	wantIs(t, "FastRegMR after dereg", err, verbs.ErrDestroyed)
}

func TestSharedMR(t *testing.T) {
	f := newFixture(t)
	sh, err := memory.NewShared(8192)
	if err != nil {
		t.Skipf("shared memory: %v", err)
	}
	defer sh.Close()
	mr, err := f.d.RegMRShared(f.pd, sh, 4096, 1024, memory.LocalWrite)
	wantIs(t, "RegMRShared", err, nil)
	if mr.Addr() != 4096 || mr.Len() != 1024 {
		t.Errorf("shared MR addr %d len %d", mr.Addr(), mr.Len())
	}
	_, err = f.d.RegMRShared(f.pd, sh, 8000, 1024, 0)
	wantIs(t, "beyond the mapping", err, verbs.ErrInvalid)
	_, err = f.d.RegMRShared(f.pd, nil, 0, 1, 0)
	wantIs(t, "nil shared", err, verbs.ErrInvalid)
	wantIs(t, "DeregMR", f.d.DeregMR(mr), nil)
}

func TestAH(t *testing.T) {
	f := newFixture(t)
	av := goodAV()
	av.DGID = netip.MustParseAddr("10.1.2.3")
	ah, err := f.d.CreateAH(f.pd, av)
	wantIs(t, "CreateAH", err, nil)
	if ah.AV().DGID != netip.MustParseAddr("::ffff:10.1.2.3") || ah.PD() != f.pd {
		t.Errorf("AH AV %+v", ah.AV())
	}
	mc := goodAV()
	mc.DGID = netip.MustParseAddr("239.0.0.1")
	_, err = f.d.CreateAH(f.pd, mc)
	wantIs(t, "multicast AH", err, nil)
	for name, mod := range map[string]func(*verbs.AddressVector){
		"no DGID":         func(a *verbs.AddressVector) { a.DGID = netip.Addr{} },
		"sgid_index":      func(a *verbs.AddressVector) { a.SGIDIndex = 9 },
		"port 0":          func(a *verbs.AddressVector) { a.PortNum = 0 },
		"family mismatch": func(a *verbs.AddressVector) { a.DGID = netip.MustParseAddr("fd00::9") },
	} {
		a := goodAV()
		mod(&a)
		_, err := f.d.CreateAH(f.pd, a)
		wantIs(t, name, err, verbs.ErrInvalid)
	}
	// A flow label wider than 20 bits keeps its low 20 bits, as providers
	// do (UCX puts ~0 in every AV).
	fl := goodAV()
	fl.FlowLabel = ^uint32(0)
	flah, err := f.d.CreateAH(f.pd, fl)
	wantIs(t, "flow label ~0", err, nil)
	if flah.AV().FlowLabel != 0xFFFFF {
		t.Errorf("flow label %#x, want 0xfffff", flah.AV().FlowLabel)
	}
	wantIs(t, "Destroy", ah.Destroy(), nil)
	wantIs(t, "Destroy twice", ah.Destroy(), verbs.ErrDestroyed)
}

func TestQPDestroyReleases(t *testing.T) {
	f := newFixture(t)
	scq, _ := f.d.CreateCQ(4)
	q, e := f.qpWith(QPInit{Type: verbs.QPTypeRC, SendCQ: scq, RecvCQ: f.cq, Cap: defaultCap})
	e.setState(verbs.QPSInit)
	_ = q.PostRecv(&verbs.RecvWR{ID: 1})
	qpn := q.QPN()
	wantIs(t, "Destroy", q.Destroy(), nil)
	if !e.destroyed.Load() {
		t.Error("engine not destroyed")
	}
	if f.d.QP(qpn) != nil {
		t.Error("QPN still registered")
	}
	if f.cq.Len() != 0 {
		t.Error("Destroy generated completions")
	}
	wantIs(t, "send CQ free", scq.Destroy(), nil)
	wantIs(t, "recv CQ free", f.cq.Destroy(), nil)
	wantIs(t, "PD free", f.d.DeallocPD(f.pd), nil)
}

func TestQPEvents(t *testing.T) {
	f := newFixture(t)
	q, e := f.qp(verbs.QPTypeRC)
	e.cfg.Event(verbs.EventCommEst)
	ev := nextEvent(t, f.d)
	if ev.Type != verbs.EventCommEst || ev.QP != q {
		t.Fatalf("event %+v", ev)
	}
}

func TestCreateQPChecks(t *testing.T) {
	f := newFixture(t)
	_, err := f.d.CreateQP(f.pd, QPInit{Type: 1, SendCQ: f.cq, RecvCQ: f.cq})
	wantIs(t, "type 1", err, verbs.ErrInvalid)
	_, err = f.d.CreateQP(f.pd, QPInit{Type: verbs.QPTypeRC, SendCQ: f.cq})
	wantIs(t, "no recv CQ", err, verbs.ErrInvalid)
	_, err = f.d.CreateQP(nil, QPInit{Type: verbs.QPTypeRC, SendCQ: f.cq, RecvCQ: f.cq})
	wantIs(t, "nil PD", err, verbs.ErrInvalid)
	other, _ := Open(Config{Provider: &fakeProvider{}})
	ocq, _ := other.CreateCQ(1)
	_, err = f.d.CreateQP(f.pd, QPInit{Type: verbs.QPTypeRC, SendCQ: f.cq, RecvCQ: ocq})
	wantIs(t, "CQ of another device", err, verbs.ErrInvalid)
	// With an SRQ, receive caps are ignored even beyond the limits.
	s := newSRQ(t, f, 1, 1)
	q, err := f.d.CreateQP(f.pd, QPInit{Type: verbs.QPTypeRC, SendCQ: f.cq, RecvCQ: f.cq, SRQ: s,
		Cap: verbs.QPCap{MaxRecvWR: 1 << 30, MaxRecvSGE: 1 << 30}})
	wantIs(t, "SRQ QP with huge receive caps", err, nil)
	if q.SRQ() != s || q.Type() != verbs.QPTypeRC || q.PD() != f.pd || q.State() != verbs.QPSReset {
		t.Error("accessors")
	}
	if len(f.d.qps) != 1 {
		t.Errorf("%d QPs registered after failures", len(f.d.qps))
	}
}
