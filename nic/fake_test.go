// A fake transport engine that records what nic asks of it, plus helpers
// shared by the tests.

package nic

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
)

type modifyCall struct {
	cur  verbs.QPState
	attr verbs.QPAttr
	mask verbs.QPAttrMask
}

// fakeEngine is a verbs.Engine that applies what nic validated, enforces
// the send queue depth as the contract asks, and flushes in ERR.
type fakeEngine struct {
	cfg verbs.QPConfig

	recvPosted atomic.Int32
	destroyed  atomic.Bool

	mu          sync.Mutex
	state       verbs.QPState
	attr        verbs.QPAttr
	modifies    []modifyCall
	posted      []*verbs.SendWR
	outstanding int
	modifyErr   error // returned by the next Modify
	// raceTo, if set, is where the QP moves "on its own" just before the
	// next Modify checks its state.
	raceTo *verbs.QPState
}

func (e *fakeEngine) QPN() uint32 { return e.cfg.QPN }

func (e *fakeEngine) State() verbs.QPState {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.state
}

// setState moves the QP as an engine would on its own (errors, SQD).
func (e *fakeEngine) setState(s verbs.QPState) {
	e.mu.Lock()
	e.state = s
	e.mu.Unlock()
}

func (e *fakeEngine) Modify(cur verbs.QPState, attr *verbs.QPAttr, mask verbs.QPAttrMask) error {
	e.mu.Lock()
	if err := e.modifyErr; err != nil {
		e.modifyErr = nil
		e.mu.Unlock()
		return err
	}
	if e.raceTo != nil {
		e.state, e.raceTo = *e.raceTo, nil
	}
	if e.state != cur {
		e.mu.Unlock()
		return fmt.Errorf("fake: in %v, not %v: %w", e.state, cur, verbs.ErrInvalidState)
	}
	e.modifies = append(e.modifies, modifyCall{cur, *attr, mask})
	if mask&verbs.AttrAV != 0 {
		e.attr.AV = attr.AV
	}
	if mask&verbs.AttrMaxDestRdAtomic != 0 {
		e.attr.MaxDestRdAtomic = attr.MaxDestRdAtomic
	}
	if mask&verbs.AttrPathMTU != 0 {
		e.attr.PathMTU = attr.PathMTU
	}
	if mask&verbs.AttrState == 0 {
		e.mu.Unlock()
		return nil
	}
	e.state = attr.State
	switch attr.State {
	case verbs.QPSReset:
		e.attr = verbs.QPAttr{}
		e.outstanding = 0
	case verbs.QPSErr:
		e.outstanding = 0
		e.mu.Unlock()
		e.flushRecv()
		return nil
	}
	e.mu.Unlock()
	return nil
}

// flushRecv completes the own receive queue with WR_FLUSH_ERR, as an
// engine entering ERR does (the state is already ERR).
func (e *fakeEngine) flushRecv() {
	if e.cfg.UsesSRQ {
		return
	}
	for {
		wr, ok := e.cfg.RQ.Pop()
		if !ok {
			return
		}
		e.cfg.RecvCQ.Push(&verbs.WC{WRID: wr.ID, Status: verbs.WCWRFlushErr, Opcode: verbs.WCRecv, QPN: e.cfg.QPN})
	}
}

func (e *fakeEngine) Query() verbs.QPAttr {
	e.mu.Lock()
	defer e.mu.Unlock()
	a := e.attr
	a.State = e.state
	return a
}

func (e *fakeEngine) PostSend(wr *verbs.SendWR) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.destroyed.Load() {
		return errors.New("fake: destroyed")
	}
	if e.state == verbs.QPSErr || e.state == verbs.QPSSQE {
		e.cfg.SendCQ.Push(&verbs.WC{WRID: wr.ID, Status: verbs.WCWRFlushErr, QPN: e.cfg.QPN})
		return nil
	}
	if e.outstanding >= int(e.cfg.Cap.MaxSendWR) {
		return fmt.Errorf("fake: %d WRs outstanding: %w", e.outstanding, verbs.ErrQueueFull)
	}
	e.outstanding++
	e.posted = append(e.posted, wr)
	return nil
}

func (e *fakeEngine) RecvPosted() { e.recvPosted.Add(1) }

func (e *fakeEngine) Destroy() { e.destroyed.Store(true) }

func (e *fakeEngine) lastModify() modifyCall {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.modifies[len(e.modifies)-1]
}

func (e *fakeEngine) postedWRs() []*verbs.SendWR {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]*verbs.SendWR(nil), e.posted...)
}

// fakeProvider creates fakeEngines.
type fakeProvider struct {
	mu      sync.Mutex
	engines map[uint32]*fakeEngine
	err     error
}

func (p *fakeProvider) CreateQP(cfg *verbs.QPConfig) (verbs.Engine, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return nil, p.err
	}
	if p.engines == nil {
		p.engines = make(map[uint32]*fakeEngine)
	}
	e := &fakeEngine{cfg: *cfg}
	p.engines[cfg.QPN] = e
	return e, nil
}

// Test fixtures.

var (
	localV4  = netip.MustParseAddr("10.0.0.1")
	peerV4   = netip.MustParseAddr("10.0.0.2")
	localV6  = netip.MustParseAddr("fd00::1")
	testMAC  = [6]byte{0x02, 0x00, 0x5e, 0x10, 0x20, 0x30}
	localAll = []netip.Addr{localV4, localV6}
)

type fixture struct {
	t    testing.TB
	d    *Device
	prov *fakeProvider
	pd   *PD
	cq   *CQ
}

func newFixture(t testing.TB, mod ...func(*Config)) *fixture {
	t.Helper()
	prov := &fakeProvider{}
	cfg := Config{Name: "test0", Provider: prov, GIDs: localAll, MAC: testMAC, MTU: 1500}
	for _, m := range mod {
		m(&cfg)
	}
	d, err := Open(cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = d.Close() })
	pd, err := d.AllocPD()
	if err != nil {
		t.Fatalf("AllocPD: %v", err)
	}
	cq, err := d.CreateCQ(min(64, d.Query().MaxCQE))
	if err != nil {
		t.Fatalf("CreateCQ: %v", err)
	}
	return &fixture{t: t, d: d, prov: prov, pd: pd, cq: cq}
}

var defaultCap = verbs.QPCap{MaxSendWR: 8, MaxRecvWR: 8, MaxSendSGE: 4, MaxRecvSGE: 4, MaxInlineData: 64}

func (f *fixture) qp(typ verbs.QPType) (*QP, *fakeEngine) {
	f.t.Helper()
	return f.qpWith(QPInit{Type: typ, SendCQ: f.cq, RecvCQ: f.cq, Cap: defaultCap})
}

func (f *fixture) qpWith(init QPInit) (*QP, *fakeEngine) {
	f.t.Helper()
	q, err := f.d.CreateQP(f.pd, init)
	if err != nil {
		f.t.Fatalf("CreateQP: %v", err)
	}
	return q, f.engine(q)
}

func (f *fixture) engine(q *QP) *fakeEngine {
	f.prov.mu.Lock()
	defer f.prov.mu.Unlock()
	return f.prov.engines[q.QPN()]
}

// qpIn creates a QP and puts its engine directly in state s.
func (f *fixture) qpIn(typ verbs.QPType, s verbs.QPState) (*QP, *fakeEngine) {
	f.t.Helper()
	q, e := f.qp(typ)
	e.setState(s)
	return q, e
}

func (f *fixture) mr(size int, acc memory.Access) (*MR, []byte) {
	f.t.Helper()
	buf := make([]byte, size)
	mr, err := f.d.RegMR(f.pd, buf, acc)
	if err != nil {
		f.t.Fatalf("RegMR: %v", err)
	}
	return mr, buf
}

// goodAV is a valid RC/UC/UD address vector for the fixture's device.
func goodAV() verbs.AddressVector {
	return verbs.AddressVector{DGID: verbs.GIDFromAddr(peerV4), SGIDIndex: 0, HopLimit: 64, PortNum: 1}
}

// goodAttr holds a valid value for every attribute.
func goodAttr() verbs.QPAttr {
	return verbs.QPAttr{
		PathMTU:         verbs.MTU1024,
		QKey:            0x11111111,
		RQPSN:           0x10,
		SQPSN:           0x20,
		DestQPN:         0x123,
		AccessFlags:     memory.RemoteWrite | memory.RemoteRead,
		AV:              goodAV(),
		PKeyIndex:       0,
		MaxRdAtomic:     1,
		MaxDestRdAtomic: 1,
		MinRNRTimer:     12,
		PortNum:         1,
		Timeout:         14,
		RetryCnt:        7,
		RNRRetry:        7,
	}
}

func wantIs(t testing.TB, what string, err, want error) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("%s: unexpected error %v", what, err)
		}
		return
	}
	if !errors.Is(err, want) {
		t.Fatalf("%s: error %v, want %v", what, err, want)
	}
}

// nextEvent returns the next queued event or fails.
func nextEvent(t testing.TB, d *Device) Event {
	t.Helper()
	select {
	case e := <-d.Events():
		return e
	default:
		t.Fatalf("no event queued")
		return Event{}
	}
}

func noEvent(t testing.TB, d *Device) {
	t.Helper()
	select {
	case e := <-d.Events():
		t.Fatalf("unexpected event %v", e.Type)
	default:
	}
}
