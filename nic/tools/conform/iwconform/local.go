package iwconform

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
)

// LocalDUT drives an ibv.Device with a ConnManager in this process: an
// rnic iWARP NIC in the tests, any iWARP device in principle.
type LocalDUT struct {
	dev  ibv.Device
	cm   ibv.ConnManager
	addr netip.Addr
	kind string

	mu    sync.Mutex
	pd    ibv.PD
	qps   map[uint64]*localQP
	mrs   map[uint64]localMR
	lis   ibv.CMListener
	conns []ibv.CMConn
	next  uint64
}

type localQP struct {
	qp ibv.QP
	cq ibv.CQ
}

type localMR struct {
	mr  ibv.MR
	buf ibv.Buffer
}

// NewLocalDUT wraps dev, which must offer rdma_cm (ibv.ConnManager), at
// its address addr.
func NewLocalDUT(dev ibv.Device, addr netip.Addr, kind string) (*LocalDUT, error) {
	cm, ok := dev.(ibv.ConnManager)
	if !ok {
		return nil, fmt.Errorf("iwconform: device %s offers no rdma_cm", dev.Name())
	}
	pd, err := dev.AllocPD()
	if err != nil {
		return nil, fmt.Errorf("iwconform: %w", err)
	}
	return &LocalDUT{dev: dev, cm: cm, addr: addr, kind: kind, pd: pd,
		qps: make(map[uint64]*localQP), mrs: make(map[uint64]localMR)}, nil
}

func (d *LocalDUT) Kind() string     { return d.kind }
func (d *LocalDUT) Addr() netip.Addr { return d.addr }
func (d *LocalDUT) Atomics() bool    { return d.dev.Query().AtomicCap != nic.AtomicNone }

func (d *LocalDUT) id() uint64 {
	d.next++
	return d.next
}

func (d *LocalDUT) NewQP(context.Context) (QP, error) {
	cq, err := d.dev.CreateCQ(256)
	if err != nil {
		return QP{}, fmt.Errorf("iwconform: %w", err)
	}
	qp, err := d.dev.CreateQP(d.pd, ibv.QPInit{Type: verbs.QPTypeRC, SendCQ: cq, RecvCQ: cq, SigAll: true,
		Cap: verbs.QPCap{MaxSendWR: 64, MaxRecvWR: 64, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		cq.Destroy()
		return QP{}, fmt.Errorf("iwconform: %w", err)
	}
	// rdma_create_qp leaves the QP in INIT, where receives may be posted
	// before the connection.
	all := memory.LocalWrite | memory.RemoteWrite | memory.RemoteRead | memory.RemoteAtomic
	if err := qp.Modify(&verbs.QPAttr{State: verbs.QPSInit, PortNum: 1, AccessFlags: all},
		verbs.AttrState|verbs.AttrPKeyIndex|verbs.AttrPort|verbs.AttrAccessFlags); err != nil {
		qp.Destroy()
		cq.Destroy()
		return QP{}, fmt.Errorf("iwconform: QP to INIT: %w", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	id := d.id()
	d.qps[id] = &localQP{qp: qp, cq: cq}
	return QP{ID: id, QPN: qp.QPN()}, nil
}

func (d *LocalDUT) RegMR(_ context.Context, size int, access memory.Access) (MR, error) {
	buf, err := d.dev.AllocBuffer(size)
	if err != nil {
		return MR{}, fmt.Errorf("iwconform: %w", err)
	}
	mr, err := d.dev.RegMR(d.pd, buf.Bytes(), access)
	if err != nil {
		buf.Close()
		return MR{}, fmt.Errorf("iwconform: %w", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	id := d.id()
	d.mrs[id] = localMR{mr: mr, buf: buf}
	return MR{ID: id, LKey: mr.LKey(), RKey: mr.RKey(), Addr: mr.Addr(), Len: size}, nil
}

func (d *LocalDUT) Listen(_ context.Context, port uint16) (uint16, error) {
	l, err := d.cm.CMListen(port)
	if err != nil {
		return 0, fmt.Errorf("iwconform: %w", err)
	}
	d.mu.Lock()
	if d.lis != nil {
		d.lis.Close()
	}
	d.lis = l
	d.mu.Unlock()
	return l.Port(), nil
}

func (d *LocalDUT) qp(q QP) (*localQP, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if lq := d.qps[q.ID]; lq != nil {
		return lq, nil
	}
	return nil, fmt.Errorf("iwconform: no QP %d", q.ID)
}

func (d *LocalDUT) mr(m MR) (localMR, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if lm, ok := d.mrs[m.ID]; ok {
		return lm, nil
	}
	return localMR{}, fmt.Errorf("iwconform: no MR %d", m.ID)
}

func param(ird, ord uint8) *ibv.ConnParam {
	return &ibv.ConnParam{ResponderResources: ird, InitiatorDepth: ord}
}

func (d *LocalDUT) Accept(ctx context.Context, q QP, privateData []byte, ird, ord uint8) ([]byte, error) {
	lq, err := d.qp(q)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	l := d.lis
	d.mu.Unlock()
	if l == nil {
		return nil, errors.New("iwconform: Accept without Listen")
	}
	req, err := l.Accept(ctx)
	if err != nil {
		return nil, fmt.Errorf("iwconform: no connection request: %w", err)
	}
	pd := append([]byte(nil), req.PrivateData()...)
	c, err := req.Accept(ctx, lq.qp, privateData, param(ird, ord))
	if err != nil {
		return pd, fmt.Errorf("iwconform: accept: %w", err)
	}
	d.track(c)
	return pd, nil
}

func (d *LocalDUT) Connect(ctx context.Context, q QP, remote netip.AddrPort, privateData []byte, ird, ord uint8) error {
	lq, err := d.qp(q)
	if err != nil {
		return err
	}
	c, err := d.cm.CMConnect(ctx, lq.qp, remote.Addr(), remote.Port(), privateData, param(ird, ord))
	if err != nil {
		return fmt.Errorf("iwconform: connect: %w", err)
	}
	d.track(c)
	return nil
}

func (d *LocalDUT) track(c ibv.CMConn) {
	d.mu.Lock()
	d.conns = append(d.conns, c)
	d.mu.Unlock()
}

func (d *LocalDUT) PostRecv(_ context.Context, q QP, id uint64, m MR, off, n int) error {
	lq, err := d.qp(q)
	if err != nil {
		return err
	}
	return lq.qp.PostRecv(&verbs.RecvWR{ID: id, SGL: []verbs.SGE{{Addr: m.Addr + uint64(off), Length: uint32(n), LKey: m.LKey}}})
}

func (d *LocalDUT) PostSend(_ context.Context, q QP, wr SendWR) error {
	lq, err := d.qp(q)
	if err != nil {
		return err
	}
	w := &verbs.SendWR{ID: wr.ID, Opcode: wr.Opcode, RemoteAddr: wr.RemoteAddr, RKey: wr.RKey,
		InvRKey: wr.InvRKey, CompareAdd: wr.CompareAdd, Swap: wr.Swap}
	if wr.Len > 0 {
		w.SGL = []verbs.SGE{{Addr: wr.MR.Addr + uint64(wr.Off), Length: uint32(wr.Len), LKey: wr.MR.LKey}}
	}
	return lq.qp.PostSend(w)
}

func (d *LocalDUT) Poll(ctx context.Context, q QP, wait time.Duration) ([]verbs.WC, error) {
	lq, err := d.qp(q)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	wcs := make([]verbs.WC, 16)
	for {
		if n := lq.cq.Poll(wcs); n > 0 {
			return wcs[:n], nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, nil
		}
		time.Sleep(time.Millisecond)
	}
}

func (d *LocalDUT) QPState(_ context.Context, q QP) (verbs.QPState, error) {
	lq, err := d.qp(q)
	if err != nil {
		return 0, err
	}
	return lq.qp.State(), nil
}

func (d *LocalDUT) ReadMR(_ context.Context, m MR, off, n int) ([]byte, error) {
	lm, err := d.mr(m)
	if err != nil {
		return nil, err
	}
	b := lm.buf.Bytes()
	if off < 0 || n < 0 || off+n > len(b) {
		return nil, fmt.Errorf("iwconform: read of %d bytes at %d outside MR of %d", n, off, len(b))
	}
	return append([]byte(nil), b[off:off+n]...), nil
}

func (d *LocalDUT) WriteMR(_ context.Context, m MR, off int, p []byte) error {
	lm, err := d.mr(m)
	if err != nil {
		return err
	}
	b := lm.buf.Bytes()
	if off < 0 || off+len(p) > len(b) {
		return fmt.Errorf("iwconform: write of %d bytes at %d outside MR of %d", len(p), off, len(b))
	}
	copy(b[off:], p)
	return nil
}

// Close disconnects, destroys what the cases created, and closes the
// device.
func (d *LocalDUT) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.lis != nil {
		d.lis.Close()
	}
	for _, lq := range d.qps {
		lq.qp.Destroy()
		lq.cq.Destroy()
	}
	for _, lm := range d.mrs {
		lm.mr.Dereg()
		lm.buf.Close()
	}
	return d.dev.Close()
}
