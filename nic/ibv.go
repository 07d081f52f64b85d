// The adapter of a *Device to the verbs API: the in-process NIC (in the
// embedded, simulated or TAP mode) behind the ibv interfaces. It lives here,
// with the implementation it adapts, so that ibv stays a vocabulary. The
// wrappers hold no state of their own beyond the object they wrap; every
// rule is nic's.

package nic

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
)

// IBVOptions are what AsIBV's device reports besides its *Device.
type IBVOptions struct {
	// Counters, if set, returns the port counters (the engine's).
	Counters func() []ibv.Counter
	// Network, if set, is the stack owning the device's addresses.
	Network ibv.Network
	// ConnManager, if set, is the rdma_cm of the device's port
	// (nic/rdmacm for RoCEv2); it must bind QPs of this device.
	ConnManager ibv.ConnManager
	// Close, if set, closes the NIC (the device and its link); otherwise
	// Close closes the *Device alone.
	Close func() error
}

// AsIBV returns dev as an ibv.Device. It implements ibv.Network and
// ibv.ConnManager exactly when opt provides them, so that a program's type assertions tell
// the truth about what the device offers.
func AsIBV(dev *Device, opt IBVOptions) ibv.Device {
	l := &ibvDevice{d: dev, opt: opt, events: make(chan ibv.Event, verbs.DefaultEventQueueLen)}
	go l.forwardEvents()
	switch {
	case opt.Network != nil && opt.ConnManager != nil:
		return &ibvNetCM{l, opt.Network, opt.ConnManager}
	case opt.Network != nil:
		return &ibvNet{l, opt.Network}
	case opt.ConnManager != nil:
		return &ibvCM{l, opt.ConnManager}
	}
	return l
}

// DeviceOf returns the *Device behind an AsIBV device, or nil.
func DeviceOf(d ibv.Device) *Device {
	if l := baseOf(d); l != nil {
		return l.d
	}
	return nil
}

// The wrappers that add the optional interfaces IBVOptions provides;
// embedding the interface promotes its methods and nothing else.
type (
	ibvNet struct {
		*ibvDevice
		ibv.Network
	}
	ibvCM struct {
		*ibvDevice
		ibv.ConnManager
	}
	ibvNetCM struct {
		*ibvDevice
		ibv.Network
		ibv.ConnManager
	}
)

// base is promoted to every wrapper, so baseOf finds the *ibvDevice behind any.
func (l *ibvDevice) base() *ibvDevice { return l }

// baseOf returns the *ibvDevice behind an AsIBV device, or nil.
func baseOf(d ibv.Device) *ibvDevice {
	if b, ok := d.(interface{ base() *ibvDevice }); ok {
		return b.base()
	}
	return nil
}

type ibvDevice struct {
	d      *Device
	opt    IBVOptions
	events chan ibv.Event
	objs   sync.Map // *QP, *CQ, *SRQ → their wrapper, for events
}

// Counters returns the port counters, or none if IBVOptions gave no
// source.
func (l *ibvDevice) Counters() []ibv.Counter {
	if l.opt.Counters == nil {
		return nil
	}
	return l.opt.Counters()
}

func (l *ibvDevice) forwardEvents() {
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
func (l *ibvDevice) wrapEvent(e Event) (ibv.Event, bool) {
	out := ibv.Event{Type: e.Type, Port: e.Port}
	var w any
	ok := true
	switch {
	case e.QP != nil:
		if w, ok = l.objs.Load(e.QP); ok {
			out.QP = w.(ibv.QP)
		}
	case e.CQ != nil:
		if w, ok = l.objs.Load(e.CQ); ok {
			out.CQ = w.(ibv.CQ)
		}
	case e.SRQ != nil:
		if w, ok = l.objs.Load(e.SRQ); ok {
			out.SRQ = w.(ibv.SRQ)
		}
	}
	return out, ok
}

func (l *ibvDevice) Name() string                                   { return l.d.Name() }
func (l *ibvDevice) Query() verbs.DeviceAttr                        { return l.d.Query() }
func (l *ibvDevice) QueryGID(port uint8, i int) (netip.Addr, error) { return l.d.QueryGID(port, i) }
func (l *ibvDevice) GIDs() []netip.Addr                             { return l.d.GIDs() }
func (l *ibvDevice) GIDIndex(a netip.Addr) (int, error)             { return l.d.GIDIndex(a) }
func (l *ibvDevice) Events() <-chan ibv.Event                       { return l.events }

func (l *ibvDevice) Close() error {
	if l.opt.Close != nil {
		return l.opt.Close()
	}
	return l.d.Close()
}

// AllocBuffer returns shared memory (a sealed memfd on Linux), the kind a
// NIC's DMA targets are: it may be handed to another process, and the race
// detector, which cannot see the engine's DMA ordering, leaves it alone as
// it does device memory. Where there is no memfd, Go memory.
func (l *ibvDevice) AllocBuffer(n int) (ibv.Buffer, error) {
	if n <= 0 {
		return nil, fmt.Errorf("nic: alloc buffer of %d bytes: %w", n, verbs.ErrInvalid)
	}
	sh, err := memory.NewShared(n)
	if errors.Is(err, errors.ErrUnsupported) {
		return &heapBuffer{b: make([]byte, n)}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("nic: alloc buffer: %w", err)
	}
	return sh, nil
}

type heapBuffer struct{ b []byte }

func (h *heapBuffer) Bytes() []byte { return h.b }
func (h *heapBuffer) Close() error  { h.b = nil; return nil }

type ibvPD struct {
	d  *Device
	pd *PD
}

func (p *ibvPD) Dealloc() error { return p.d.DeallocPD(p.pd) }

// PDOf returns the *PD behind a PD of an AsIBV device, or nil.
func PDOf(pd ibv.PD) *PD {
	if p, ok := pd.(*ibvPD); ok {
		return p.pd
	}
	return nil
}

func (l *ibvDevice) AllocPD() (ibv.PD, error) {
	pd, err := l.d.AllocPD()
	if err != nil {
		return nil, err
	}
	return &ibvPD{d: l.d, pd: pd}, nil
}

func (l *ibvDevice) pd(pd ibv.PD) (*PD, error) {
	p, ok := pd.(*ibvPD)
	if !ok || p.d != l.d {
		return nil, ibv.ErrForeign
	}
	return p.pd, nil
}

type ibvMR struct {
	d  *Device
	mr *MR
}

func (m *ibvMR) LKey() uint32 { return m.mr.LKey() }
func (m *ibvMR) RKey() uint32 { return m.mr.RKey() }
func (m *ibvMR) Addr() uint64 { return m.mr.Addr() }
func (m *ibvMR) Len() uint64  { return m.mr.Len() }
func (m *ibvMR) Dereg() error { return m.d.DeregMR(m.mr) }

// MROf returns the *MR behind an MR of an AsIBV device, or nil.
func MROf(mr ibv.MR) *MR {
	if m, ok := mr.(*ibvMR); ok {
		return m.mr
	}
	return nil
}

func (l *ibvDevice) RegMR(pd ibv.PD, buf []byte, access memory.Access) (ibv.MR, error) {
	p, err := l.pd(pd)
	if err != nil {
		return nil, err
	}
	mr, err := l.d.RegMR(p, buf, access)
	if err != nil {
		return nil, err
	}
	return &ibvMR{d: l.d, mr: mr}, nil
}

func (l *ibvDevice) RegMRIOVA(pd ibv.PD, buf []byte, iova uint64, access memory.Access) (ibv.MR, error) {
	p, err := l.pd(pd)
	if err != nil {
		return nil, err
	}
	mr, err := l.d.RegMRIOVA(p, buf, iova, access)
	if err != nil {
		return nil, err
	}
	return &ibvMR{d: l.d, mr: mr}, nil
}

type ibvCQ struct {
	l  *ibvDevice
	cq *CQ
}

func (c *ibvCQ) Poll(wcs []verbs.WC) int            { return c.cq.Poll(wcs) }
func (c *ibvCQ) ReqNotify(solicitedOnly bool) error { return c.cq.ReqNotify(solicitedOnly) }
func (c *ibvCQ) Notify() <-chan struct{}            { return c.cq.Notify() }
func (c *ibvCQ) Err() error                         { return c.cq.Err() }

func (c *ibvCQ) Destroy() error {
	if err := c.cq.Destroy(); err != nil {
		return err
	}
	c.l.objs.Delete(c.cq)
	return nil
}

// CQOf returns the *CQ behind a CQ of an AsIBV device, or nil.
func CQOf(cq ibv.CQ) *CQ {
	if c, ok := cq.(*ibvCQ); ok {
		return c.cq
	}
	return nil
}

func (l *ibvDevice) CreateCQ(cqe int) (ibv.CQ, error) {
	cq, err := l.d.CreateCQ(cqe)
	if err != nil {
		return nil, err
	}
	w := &ibvCQ{l: l, cq: cq}
	l.objs.Store(cq, w)
	return w, nil
}

type ibvSRQ struct {
	l   *ibvDevice
	srq *SRQ
}

func (s *ibvSRQ) PostRecv(wrs ...*verbs.RecvWR) error { return s.srq.PostRecv(wrs...) }

func (s *ibvSRQ) Destroy() error {
	if err := s.srq.Destroy(); err != nil {
		return err
	}
	s.l.objs.Delete(s.srq)
	return nil
}

func (l *ibvDevice) CreateSRQ(pd ibv.PD, maxWR, maxSGE int) (ibv.SRQ, error) {
	p, err := l.pd(pd)
	if err != nil {
		return nil, err
	}
	srq, err := l.d.CreateSRQ(p, maxWR, maxSGE)
	if err != nil {
		return nil, err
	}
	w := &ibvSRQ{l: l, srq: srq}
	l.objs.Store(srq, w)
	return w, nil
}

type ibvAH struct{ ah *AH }

func (a *ibvAH) AV() *verbs.AddressVector { return a.ah.AV() }
func (a *ibvAH) Destroy() error           { return a.ah.Destroy() }

func (l *ibvDevice) CreateAH(pd ibv.PD, av verbs.AddressVector) (ibv.AH, error) {
	p, err := l.pd(pd)
	if err != nil {
		return nil, err
	}
	ah, err := l.d.CreateAH(p, av)
	if err != nil {
		return nil, err
	}
	return &ibvAH{ah: ah}, nil
}

type ibvQP struct {
	l  *ibvDevice
	qp *QP
}

func (q *ibvQP) QPN() uint32                                      { return q.qp.QPN() }
func (q *ibvQP) Type() verbs.QPType                               { return q.qp.Type() }
func (q *ibvQP) Cap() verbs.QPCap                                 { return q.qp.Cap() }
func (q *ibvQP) State() verbs.QPState                             { return q.qp.State() }
func (q *ibvQP) Modify(a *verbs.QPAttr, m verbs.QPAttrMask) error { return q.qp.Modify(a, m) }
func (q *ibvQP) Query() (verbs.QPAttr, error)                     { return q.qp.Query() }
func (q *ibvQP) PostSend(wrs ...*verbs.SendWR) error              { return q.qp.PostSend(wrs...) }
func (q *ibvQP) PostRecv(wrs ...*verbs.RecvWR) error              { return q.qp.PostRecv(wrs...) }

func (q *ibvQP) Destroy() error {
	if err := q.qp.Destroy(); err != nil {
		return err
	}
	q.l.objs.Delete(q.qp)
	return nil
}

// QPOf returns the *QP behind a QP of an AsIBV device, or nil.
func QPOf(qp ibv.QP) *QP {
	if q, ok := qp.(*ibvQP); ok {
		return q.qp
	}
	return nil
}

// WrapQP returns the ibv.QP for a QP created on dev directly (by rdmacm,
// for instance), the same wrapper every time; d must be AsIBV(dev). It
// returns nil when qp is not a live QP of dev.
func WrapQP(d ibv.Device, qp *QP) ibv.QP {
	l := baseOf(d)
	if l == nil || qp == nil || l.d.QP(qp.QPN()) != qp {
		return nil
	}
	w, _ := l.objs.LoadOrStore(qp, &ibvQP{l: l, qp: qp})
	return w.(ibv.QP)
}

func (l *ibvDevice) CreateQP(pd ibv.PD, init ibv.QPInit) (ibv.QP, error) {
	p, err := l.pd(pd)
	if err != nil {
		return nil, err
	}
	ni := QPInit{Type: init.Type, Cap: init.Cap, SigAll: init.SigAll}
	if ni.SendCQ, err = l.cq(init.SendCQ); err != nil {
		return nil, err
	}
	if ni.RecvCQ, err = l.cq(init.RecvCQ); err != nil {
		return nil, err
	}
	if init.SRQ != nil {
		s, ok := init.SRQ.(*ibvSRQ)
		if !ok || s.l != l {
			return nil, ibv.ErrForeign
		}
		ni.SRQ = s.srq
	}
	qp, err := l.d.CreateQP(p, ni)
	if err != nil {
		return nil, err
	}
	w := &ibvQP{l: l, qp: qp}
	l.objs.Store(qp, w)
	return w, nil
}

// cq unwraps a CQ of this device; nil stays nil (nic reports it).
func (l *ibvDevice) cq(cq ibv.CQ) (*CQ, error) {
	if cq == nil {
		return nil, nil
	}
	c, ok := cq.(*ibvCQ)
	if !ok || c.l != l {
		return nil, ibv.ErrForeign
	}
	return c.cq, nil
}

// QueryPort adds to the model's port attributes the two counters
// ibv_query_port reports, taken from the engine's: bad_pkey_cntr and
// qkey_viol_cntr.
func (l *ibvDevice) QueryPort(port uint8) (verbs.PortAttr, error) {
	a, err := l.d.QueryPort(port)
	if err != nil {
		return a, err
	}
	for _, c := range l.Counters() {
		switch c.Name {
		case BadPKeyCounter:
			a.BadPKeyCntr = portCounter(c.Value)
		case QKeyViolationCounter:
			a.QKeyViolCntr = portCounter(c.Value)
		}
	}
	return a, nil
}

// The names of the engine counters QueryPort reports (the RoCE engine's).
const (
	BadPKeyCounter       = "bad_pkey"
	QKeyViolationCounter = "qkey_violation"
)

// portCounter is v as a 16-bit IBTA port counter, which stops at its
// maximum.
func portCounter(v uint64) uint32 {
	return uint32(min(v, verbs.MaxPortCounter))
}
