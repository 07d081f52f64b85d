// Queue pairs: creation (ibv_create_qp) with capability checks, the engine
// behind each QP, query and destruction. State transitions are in
// qp_modify.go, work request posting in post.go.

package nic

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/rnic/rnic/nic/verbs"
)

// QPInit are the creation attributes of a QP (struct ibv_qp_init_attr).
type QPInit struct {
	Type   verbs.QPType
	SendCQ *CQ
	RecvCQ *CQ
	// SRQ, if set, is where receives come from; the QP then has no receive
	// queue of its own and Cap's receive fields are ignored.
	SRQ *SRQ
	Cap verbs.QPCap
	// SigAll makes every send WR generate a completion (sq_sig_all).
	SigAll bool
}

// QP is a queue pair.
type QP struct {
	d      *Device
	pd     *PD
	typ    verbs.QPType
	qpn    uint32
	sendCQ *CQ
	recvCQ *CQ
	srq    *SRQ
	rq     *rq // nil when the QP uses an SRQ
	cap    verbs.QPCap
	eng    verbs.Engine

	destroyed atomic.Bool

	// mu serialises Modify, Query and Destroy.
	mu         sync.Mutex
	destRdAtom int                 // max_dest_rd_atomic counted against max_res_rd_atom
	watch      func(verbs.QPState) // WatchState's f; guarded by mu

	// sendMu serialises PostSend, so WRs reach the engine in post order.
	sendMu sync.Mutex
	slab   slab // copies of posted send WRs; guarded by sendMu
}

// CreateQP creates a QP of init.Type in pd (ibv_create_qp): it checks the
// capabilities against the device limits, assigns a QPN and creates the
// QP's engine through the provider. The QP starts in RESET.
func (d *Device) CreateQP(pd *PD, init QPInit) (*QP, error) {
	if err := d.checkQPInit(&init); err != nil {
		return nil, err
	}
	if init.SRQ != nil {
		init.Cap.MaxRecvWR, init.Cap.MaxRecvSGE = 0, 0
	}

	d.mu.Lock()
	provider := d.provider
	if provider == nil {
		d.mu.Unlock()
		return nil, errorf(verbs.ErrNoProvider, "create QP on %s", d.name)
	}
	if d.closed {
		d.mu.Unlock()
		return nil, errorf(verbs.ErrClosed, "create QP on %s", d.name)
	}
	if len(d.qps) >= d.limits.MaxQP {
		d.mu.Unlock()
		return nil, errorf(verbs.ErrNoMemory, "%d QPs, the device maximum", d.limits.MaxQP)
	}
	qpn := d.allocQPN()
	d.qps[qpn] = nil // reserved while the engine is created
	d.mu.Unlock()

	q := &QP{d: d, pd: pd, typ: init.Type, qpn: qpn, sendCQ: init.SendCQ, recvCQ: init.RecvCQ, srq: init.SRQ, cap: init.Cap}
	undo, err := q.acquireAll()
	if err != nil {
		d.freeQPN(qpn)
		return nil, fmt.Errorf("nic: create QP: %w", err)
	}
	cfg := &verbs.QPConfig{
		Type:    init.Type,
		QPN:     qpn,
		PD:      pd.id,
		Memory:  d.mem,
		SendCQ:  init.SendCQ,
		RecvCQ:  init.RecvCQ,
		UsesSRQ: init.SRQ != nil,
		Cap:     init.Cap,
		SigAll:  init.SigAll,
		PortMTU: d.mtu,
		Event:   q.raise,
	}
	if init.SRQ != nil {
		cfg.RQ = init.SRQ
	} else {
		q.rq = &rq{recvRing: newRecvRing(int(init.Cap.MaxRecvWR)), maxSGE: int(init.Cap.MaxRecvSGE)}
		cfg.RQ = q.rq
	}
	eng, err := provider.CreateQP(cfg)
	if err != nil {
		undo()
		d.freeQPN(qpn)
		return nil, fmt.Errorf("nic: create QP: provider: %w", err)
	}
	q.eng = eng
	if init.SRQ != nil {
		init.SRQ.attach(q)
	}
	d.mu.Lock()
	d.qps[qpn] = q
	d.mu.Unlock()
	return q, nil
}

// checkQPInit checks the creation attributes against the device limits
// (ibv_create_qp fails with EINVAL beyond them).
func (d *Device) checkQPInit(init *QPInit) error {
	switch init.Type {
	case verbs.QPTypeRC, verbs.QPTypeUC, verbs.QPTypeUD:
	default:
		return errorf(verbs.ErrInvalid, "create QP: type %d: RC, UC or UD only", init.Type)
	}
	if init.SendCQ == nil || init.RecvCQ == nil {
		return errorf(verbs.ErrInvalid, "create QP: send and receive CQs are required")
	}
	c := &init.Cap
	l := &d.limits
	for _, f := range []struct {
		name string
		v    uint32
		max  int
		recv bool
	}{
		{"max_send_wr", c.MaxSendWR, l.MaxQPWR, false},
		{"max_send_sge", c.MaxSendSGE, l.MaxSGE, false},
		{"max_inline_data", c.MaxInlineData, l.MaxInlineData, false},
		{"max_recv_wr", c.MaxRecvWR, l.MaxQPWR, true},
		{"max_recv_sge", c.MaxRecvSGE, l.MaxSGE, true},
	} {
		if f.recv && init.SRQ != nil {
			continue // ignored with an SRQ
		}
		if uint64(f.v) > uint64(f.max) {
			return errorf(verbs.ErrInvalid, "create QP: %s %d exceeds the device's %d", f.name, f.v, f.max)
		}
	}
	return nil
}

// acquireAll takes references on the PD, CQs and SRQ, returning the undo.
func (q *QP) acquireAll() (undo func(), err error) {
	var undos []func()
	undo = func() {
		for i := len(undos) - 1; i >= 0; i-- {
			undos[i]()
		}
	}
	if err := q.pd.acquire(q.d); err != nil {
		return nil, err
	}
	undos = append(undos, q.pd.put)
	for _, cq := range []*CQ{q.sendCQ, q.recvCQ} {
		if err := cq.acquire(q.d); err != nil {
			undo()
			return nil, err
		}
		undos = append(undos, cq.put)
	}
	if q.srq != nil {
		if err := q.srq.acquire(q.d); err != nil {
			undo()
			return nil, err
		}
		undos = append(undos, q.srq.put)
	}
	return undo, nil
}

// freeQPN returns a reserved QPN.
func (d *Device) freeQPN(qpn uint32) {
	d.mu.Lock()
	delete(d.qps, qpn)
	d.mu.Unlock()
}

// raise is the engine's async-event callback (QPConfig.Event).
func (q *QP) raise(e verbs.AsyncEvent) {
	q.d.events.raise(Event{Type: e, QP: q})
}

// WatchState has f called with the QP's state after every Modify that
// succeeds, under the QP's lock, so never after Destroy has returned. A
// daemon mirrors the state in its client's memory with it the moment a
// connection manager moves the QP: librdmacm's rdma_accept leaves the QP
// in RTS, and the peer's first message may be answered before the CM's
// own result reaches the client.
func (q *QP) WatchState(f func(verbs.QPState)) {
	q.mu.Lock()
	q.watch = f
	q.mu.Unlock()
}

// QPN returns the queue pair number.
func (q *QP) QPN() uint32 { return q.qpn }

// Type returns the QP's transport service.
func (q *QP) Type() verbs.QPType { return q.typ }

// PD returns the QP's protection domain.
func (q *QP) PD() *PD { return q.pd }

// SRQ returns the SRQ the QP receives from, or nil.
func (q *QP) SRQ() *SRQ { return q.srq }

// Cap returns the QP's queue capacities.
func (q *QP) Cap() verbs.QPCap { return q.cap }

// State returns the current state, which the engine may change on its own
// (to SQE or ERR, or SQD draining).
func (q *QP) State() verbs.QPState { return q.eng.State() }

// Query returns the QP's attributes (ibv_query_qp): the engine's view, with
// the current state, the capacities, and for UD the port's path MTU.
func (q *QP) Query() (verbs.QPAttr, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.destroyed.Load() {
		return verbs.QPAttr{}, errorf(verbs.ErrDestroyed, "query QP %#x", q.qpn)
	}
	a := q.eng.Query()
	a.State = q.eng.State()
	a.CurState = a.State
	a.Cap = q.cap
	if q.typ == verbs.QPTypeUD && a.State != verbs.QPSReset {
		a.PathMTU = q.d.mtu
	}
	return a, nil
}

// Destroy destroys the QP (ibv_destroy_qp) in whatever state it is: its
// engine stops, outstanding WRs are discarded without completions, and the
// PD, CQs and SRQ are released.
func (q *QP) Destroy() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	// Taking sendMu and the RQ lock orders Destroy after any post in
	// progress and before any later one, which then sees destroyed.
	q.sendMu.Lock()
	if q.rq != nil {
		q.rq.mu.Lock()
	}
	already := q.destroyed.Swap(true)
	if q.rq != nil {
		q.rq.clear()
		q.rq.mu.Unlock()
	}
	q.sendMu.Unlock()
	if already {
		return errorf(verbs.ErrDestroyed, "destroy QP %#x", q.qpn)
	}
	q.detachAll()
	q.eng.Destroy()
	if q.srq != nil {
		q.srq.detach(q)
	}
	q.sendCQ.put()
	q.recvCQ.put()
	q.pd.put()
	q.d.mu.Lock()
	q.d.resRdAtom -= q.destRdAtom
	q.destRdAtom = 0
	delete(q.d.qps, q.qpn)
	q.d.mu.Unlock()
	return nil
}

func (q *QP) String() string { return fmt.Sprintf("%v QP %#x", q.typ, q.qpn) }
