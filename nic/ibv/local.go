// Local: the in-process NIC (*nic.Device, in the embedded, simulated or TAP
// mode) behind the ibv interfaces. The wrappers hold no state of their own
// beyond the object they wrap; every rule is nic's.

package ibv

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/verbs"
)

// ErrForeign is returned when an object from another Device is given to a
// Device.
var ErrForeign = errors.New("ibv: object belongs to another device")

// LocalOptions are what a Local device reports besides its *nic.Device.
type LocalOptions struct {
	// Counters, if set, returns the port counters (the engine's).
	Counters func() []Counter
	// Network, if set, is the stack owning the device's addresses.
	Network Network
	// ConnManager, if set, is the rdma_cm of the device's port
	// (nic/rdmacm for RoCEv2); it must bind QPs of this device.
	ConnManager ConnManager
	// Close, if set, closes the NIC (the device and its link); otherwise
	// Close closes the *nic.Device alone.
	Close func() error
}

// Local returns dev as a Device. It implements Network and ConnManager
// exactly when opt provides them, so that a program's type assertions tell
// the truth about what the device offers.
func Local(dev *nic.Device, opt LocalOptions) Device {
	l := &local{d: dev, opt: opt, events: make(chan Event, verbs.DefaultEventQueueLen)}
	go l.forwardEvents()
	switch {
	case opt.Network != nil && opt.ConnManager != nil:
		return &localNetCM{l, opt.Network, opt.ConnManager}
	case opt.Network != nil:
		return &localNet{l, opt.Network}
	case opt.ConnManager != nil:
		return &localCM{l, opt.ConnManager}
	}
	return l
}

// LocalNIC returns the *nic.Device behind a Local device, or nil.
func LocalNIC(d Device) *nic.Device {
	if l := baseOf(d); l != nil {
		return l.d
	}
	return nil
}

// The wrappers that add the optional interfaces LocalOptions provides;
// embedding the interface promotes its methods and nothing else.
type (
	localNet struct {
		*local
		Network
	}
	localCM struct {
		*local
		ConnManager
	}
	localNetCM struct {
		*local
		Network
		ConnManager
	}
)

// base is promoted to every wrapper, so baseOf finds the *local behind any.
func (l *local) base() *local { return l }

// baseOf returns the *local behind a Local device, or nil.
func baseOf(d Device) *local {
	if b, ok := d.(interface{ base() *local }); ok {
		return b.base()
	}
	return nil
}

type local struct {
	d      *nic.Device
	opt    LocalOptions
	events chan Event
	objs   sync.Map // *nic.QP, *nic.CQ, *nic.SRQ → their wrapper, for events
}

// Counters returns the port counters, or none if LocalOptions gave no
// source.
func (l *local) Counters() []Counter {
	if l.opt.Counters == nil {
		return nil
	}
	return l.opt.Counters()
}

func (l *local) forwardEvents() {
	defer close(l.events)
	for e := range l.d.Events() {
		out, ok := l.wrapEvent(e)
		if !ok {
			continue
		}
		select {
		case l.events <- out:
		default: // as nic does: a reader that does not read loses events
		}
	}
}

// wrapEvent gives e the wrappers of its object; false when the object is
// already destroyed (its wrapper gone): such an event is dropped, as the
// kernel drops the events of a destroyed object. Passed on without its
// object it would look like a port event, with no QP for a QP's event
// (UCX's handler dereferenced the NULL element.qp of one).
func (l *local) wrapEvent(e nic.Event) (Event, bool) {
	out := Event{Type: e.Type, Port: e.Port}
	var w any
	ok := true
	switch {
	case e.QP != nil:
		if w, ok = l.objs.Load(e.QP); ok {
			out.QP = w.(QP)
		}
	case e.CQ != nil:
		if w, ok = l.objs.Load(e.CQ); ok {
			out.CQ = w.(CQ)
		}
	case e.SRQ != nil:
		if w, ok = l.objs.Load(e.SRQ); ok {
			out.SRQ = w.(SRQ)
		}
	}
	return out, ok
}

func (l *local) Name() string                                   { return l.d.Name() }
func (l *local) Query() verbs.DeviceAttr                        { return l.d.Query() }
func (l *local) QueryPort(port uint8) (verbs.PortAttr, error)   { return l.d.QueryPort(port) }
func (l *local) QueryGID(port uint8, i int) (netip.Addr, error) { return l.d.QueryGID(port, i) }
func (l *local) GIDs() []netip.Addr                             { return l.d.GIDs() }
func (l *local) GIDIndex(a netip.Addr) (int, error)             { return l.d.GIDIndex(a) }
func (l *local) Events() <-chan Event                           { return l.events }

func (l *local) Close() error {
	if l.opt.Close != nil {
		return l.opt.Close()
	}
	return l.d.Close()
}

// AllocBuffer returns shared memory (a sealed memfd on Linux), the kind a
// NIC's DMA targets are: it may be handed to another process, and the race
// detector, which cannot see the engine's DMA ordering, leaves it alone as
// it does device memory. Where there is no memfd, Go memory.
func (l *local) AllocBuffer(n int) (Buffer, error) {
	if n <= 0 {
		return nil, fmt.Errorf("ibv: alloc buffer of %d bytes: %w", n, verbs.ErrInvalid)
	}
	sh, err := memory.NewShared(n)
	if errors.Is(err, errors.ErrUnsupported) {
		return &heapBuffer{b: make([]byte, n)}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ibv: alloc buffer: %w", err)
	}
	return sh, nil
}

type heapBuffer struct{ b []byte }

func (h *heapBuffer) Bytes() []byte { return h.b }
func (h *heapBuffer) Close() error  { h.b = nil; return nil }

type localPD struct {
	d  *nic.Device
	pd *nic.PD
}

func (p *localPD) Dealloc() error { return p.d.DeallocPD(p.pd) }

// PD returns the *nic.PD behind a Local PD, or nil.
func LocalPD(pd PD) *nic.PD {
	if p, ok := pd.(*localPD); ok {
		return p.pd
	}
	return nil
}

func (l *local) AllocPD() (PD, error) {
	pd, err := l.d.AllocPD()
	if err != nil {
		return nil, err
	}
	return &localPD{d: l.d, pd: pd}, nil
}

func (l *local) pd(pd PD) (*nic.PD, error) {
	p, ok := pd.(*localPD)
	if !ok || p.d != l.d {
		return nil, ErrForeign
	}
	return p.pd, nil
}

type localMR struct {
	d  *nic.Device
	mr *nic.MR
}

func (m *localMR) LKey() uint32 { return m.mr.LKey() }
func (m *localMR) RKey() uint32 { return m.mr.RKey() }
func (m *localMR) Addr() uint64 { return m.mr.Addr() }
func (m *localMR) Len() uint64  { return m.mr.Len() }
func (m *localMR) Dereg() error { return m.d.DeregMR(m.mr) }

// LocalMR returns the *nic.MR behind a Local MR, or nil.
func LocalMR(mr MR) *nic.MR {
	if m, ok := mr.(*localMR); ok {
		return m.mr
	}
	return nil
}

func (l *local) RegMR(pd PD, buf []byte, access memory.Access) (MR, error) {
	p, err := l.pd(pd)
	if err != nil {
		return nil, err
	}
	mr, err := l.d.RegMR(p, buf, access)
	if err != nil {
		return nil, err
	}
	return &localMR{d: l.d, mr: mr}, nil
}

func (l *local) RegMRIOVA(pd PD, buf []byte, iova uint64, access memory.Access) (MR, error) {
	p, err := l.pd(pd)
	if err != nil {
		return nil, err
	}
	mr, err := l.d.RegMRIOVA(p, buf, iova, access)
	if err != nil {
		return nil, err
	}
	return &localMR{d: l.d, mr: mr}, nil
}

type localCQ struct {
	l  *local
	cq *nic.CQ
}

func (c *localCQ) Poll(wcs []verbs.WC) int            { return c.cq.Poll(wcs) }
func (c *localCQ) ReqNotify(solicitedOnly bool) error { return c.cq.ReqNotify(solicitedOnly) }
func (c *localCQ) Notify() <-chan struct{}            { return c.cq.Notify() }
func (c *localCQ) Err() error                         { return c.cq.Err() }

func (c *localCQ) Destroy() error {
	if err := c.cq.Destroy(); err != nil {
		return err
	}
	c.l.objs.Delete(c.cq)
	return nil
}

// LocalCQ returns the *nic.CQ behind a Local CQ, or nil.
func LocalCQ(cq CQ) *nic.CQ {
	if c, ok := cq.(*localCQ); ok {
		return c.cq
	}
	return nil
}

func (l *local) CreateCQ(cqe int) (CQ, error) {
	cq, err := l.d.CreateCQ(cqe)
	if err != nil {
		return nil, err
	}
	w := &localCQ{l: l, cq: cq}
	l.objs.Store(cq, w)
	return w, nil
}

type localSRQ struct {
	l   *local
	srq *nic.SRQ
}

func (s *localSRQ) PostRecv(wrs ...*verbs.RecvWR) error { return s.srq.PostRecv(wrs...) }

func (s *localSRQ) Destroy() error {
	if err := s.srq.Destroy(); err != nil {
		return err
	}
	s.l.objs.Delete(s.srq)
	return nil
}

func (l *local) CreateSRQ(pd PD, maxWR, maxSGE int) (SRQ, error) {
	p, err := l.pd(pd)
	if err != nil {
		return nil, err
	}
	srq, err := l.d.CreateSRQ(p, maxWR, maxSGE)
	if err != nil {
		return nil, err
	}
	w := &localSRQ{l: l, srq: srq}
	l.objs.Store(srq, w)
	return w, nil
}

type localAH struct{ ah *nic.AH }

func (a *localAH) AV() *verbs.AddressVector { return a.ah.AV() }
func (a *localAH) Destroy() error           { return a.ah.Destroy() }

func (l *local) CreateAH(pd PD, av verbs.AddressVector) (AH, error) {
	p, err := l.pd(pd)
	if err != nil {
		return nil, err
	}
	ah, err := l.d.CreateAH(p, av)
	if err != nil {
		return nil, err
	}
	return &localAH{ah: ah}, nil
}

type localQP struct {
	l  *local
	qp *nic.QP
}

func (q *localQP) QPN() uint32                                      { return q.qp.QPN() }
func (q *localQP) Type() verbs.QPType                               { return q.qp.Type() }
func (q *localQP) Cap() verbs.QPCap                                 { return q.qp.Cap() }
func (q *localQP) State() verbs.QPState                             { return q.qp.State() }
func (q *localQP) Modify(a *verbs.QPAttr, m verbs.QPAttrMask) error { return q.qp.Modify(a, m) }
func (q *localQP) Query() (verbs.QPAttr, error)                     { return q.qp.Query() }
func (q *localQP) PostSend(wrs ...*verbs.SendWR) error              { return q.qp.PostSend(wrs...) }
func (q *localQP) PostRecv(wrs ...*verbs.RecvWR) error              { return q.qp.PostRecv(wrs...) }

func (q *localQP) Destroy() error {
	if err := q.qp.Destroy(); err != nil {
		return err
	}
	q.l.objs.Delete(q.qp)
	return nil
}

// LocalQP returns the *nic.QP behind a Local QP, or nil.
func LocalQP(qp QP) *nic.QP {
	if q, ok := qp.(*localQP); ok {
		return q.qp
	}
	return nil
}

// WrapQP returns the Local QP for a QP created on dev directly (by rdmacm,
// for instance), the same wrapper every time; d must be Local(dev). It
// returns nil when qp is not a live QP of dev.
func WrapQP(d Device, qp *nic.QP) QP {
	l := baseOf(d)
	if l == nil || qp == nil || l.d.QP(qp.QPN()) != qp {
		return nil
	}
	w, _ := l.objs.LoadOrStore(qp, &localQP{l: l, qp: qp})
	return w.(QP)
}

func (l *local) CreateQP(pd PD, init QPInit) (QP, error) {
	p, err := l.pd(pd)
	if err != nil {
		return nil, err
	}
	ni := nic.QPInit{Type: init.Type, Cap: init.Cap, SigAll: init.SigAll}
	if ni.SendCQ, err = l.cq(init.SendCQ); err != nil {
		return nil, err
	}
	if ni.RecvCQ, err = l.cq(init.RecvCQ); err != nil {
		return nil, err
	}
	if init.SRQ != nil {
		s, ok := init.SRQ.(*localSRQ)
		if !ok || s.l != l {
			return nil, ErrForeign
		}
		ni.SRQ = s.srq
	}
	qp, err := l.d.CreateQP(p, ni)
	if err != nil {
		return nil, err
	}
	w := &localQP{l: l, qp: qp}
	l.objs.Store(qp, w)
	return w, nil
}

// cq unwraps a CQ of this device; nil stays nil (nic reports it).
func (l *local) cq(cq CQ) (*nic.CQ, error) {
	if cq == nil {
		return nil, nil
	}
	c, ok := cq.(*localCQ)
	if !ok || c.l != l {
		return nil, ErrForeign
	}
	return c.cq, nil
}
