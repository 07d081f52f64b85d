// Queue pairs: creation, modify, query and destroy are round trips; posting
// writes WQEs into the QP's rings (post.go).

package client

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/verbs"
)

// QP is a queue pair of the daemon.
type QP struct {
	d     *Device
	h     uint32
	qpn   uint32
	typ   verbs.QPType
	cap   verbs.QPCap
	pd    *PD
	srq   *SRQ
	mem   ringRef
	rings *proto.WorkRings
	bell  uint32 // the QP's bit in the session doorbell

	sqMu   sync.Mutex
	sqProd uint32
	rqMu   sync.Mutex
	rqProd uint32

	dead     atomic.Bool
	retired  sync.Once
	released sync.Once
}

var _ ibv.QP = (*QP)(nil)

// CreateQP creates a QP.
func (d *Device) CreateQP(pd ibv.PD, init ibv.QPInit) (ibv.QP, error) {
	p, err := d.pd(pd)
	if err != nil {
		return nil, err
	}
	req := &proto.CreateQPReq{PD: p.h, Type: init.Type, SigAll: init.SigAll, Cap: init.Cap}
	if init.SendCQ == nil || init.RecvCQ == nil {
		return nil, fmt.Errorf("rnicd: create QP: send and receive CQs are required: %w", verbs.ErrInvalid)
	}
	scq, err := d.cq(init.SendCQ)
	if err != nil {
		return nil, err
	}
	rcq, err := d.cq(init.RecvCQ)
	if err != nil {
		return nil, err
	}
	req.SendCQ, req.RecvCQ = scq.h, rcq.h
	var srq *SRQ
	if init.SRQ != nil {
		s, ok := init.SRQ.(*SRQ)
		if !ok || s.d != d {
			return nil, ibv.ErrForeign
		}
		srq, req.SRQ = s, s.h
	}
	rep := proto.CreateQPReply{}
	d.arena.mu.Lock()
	fds, err := d.call(proto.OpCreateQP, req, nil, &rep)
	if err != nil {
		d.arena.mu.Unlock()
		return nil, err
	}
	q := &QP{d: d, h: rep.QP, qpn: rep.QPN, typ: init.Type, cap: rep.Cap, pd: p, srq: srq}
	err = q.setup(&rep, fds)
	d.arena.mu.Unlock()
	if err != nil {
		d.call(proto.OpDestroyQP, &proto.Handle{H: rep.QP}, nil, &proto.Empty{})
		q.mem.release()
		return nil, err
	}
	d.mu.Lock()
	d.qps[q.h] = q
	d.mu.Unlock()
	if d.goneError() != nil {
		q.retire() // the reader has retired the others already
	}
	return q, nil
}

func (q *QP) setup(rep *proto.CreateQPReply, fds []int) (err error) {
	q.mem, q.rings, err = q.d.mapWorkRings("CREATE_QP", rep.Ring, rep.Place, fds)
	if err == nil {
		q.bell = q.rings.Bell.Load()
	}
	return err
}

// mapWorkRings finds the send/receive rings of a CREATE_QP or CREATE_SRQ
// reply in the arena, mapping their chunk if the reply brings it (the
// rings name the object's bell in the session doorbell), or closes every
// descriptor and fails. The caller holds d.arena.mu.
func (d *Device) mapWorkRings(op string, l proto.RingLayout, p proto.RingPlace, fds []int) (ringRef, *proto.WorkRings, error) {
	if err := l.Validate(); err != nil {
		closeFDs(fds)
		return ringRef{}, nil, err
	}
	mem, ref, rest, err := d.takeRings(op, p, l.Size(), fds, 0)
	closeFDs(rest)
	if err != nil {
		return ref, nil, err
	}
	rings, err := proto.NewWorkRings(mem, l)
	return ref, rings, err
}

func (q *QP) QPN() uint32        { return q.qpn }
func (q *QP) Type() verbs.QPType { return q.typ }
func (q *QP) Cap() verbs.QPCap   { return q.cap }
func (q *QP) String() string     { return fmt.Sprintf("%v QP %#x", q.typ, q.qpn) }

// ringState is the state the daemon last published in the rings.
func (q *QP) ringState() verbs.QPState { return verbs.QPState(q.rings.State.Load()) }

// State returns the QP's current state (asking the daemon); ERR once the
// daemon is gone.
func (q *QP) State() verbs.QPState {
	var rep proto.QPStateReply
	if _, err := q.d.call(proto.OpQPState, &proto.Handle{H: q.h}, nil, &rep); err != nil {
		q.sqMu.Lock() // the ring stays mapped meanwhile
		defer q.sqMu.Unlock()
		if q.d.goneError() != nil || q.dead.Load() {
			return verbs.QPSErr
		}
		return q.ringState()
	}
	return rep.State
}

// Modify applies attr's fields named by mask. WQEs posted before it take
// effect before the change.
func (q *QP) Modify(attr *verbs.QPAttr, mask verbs.QPAttrMask) error {
	if attr == nil {
		return fmt.Errorf("rnicd: modify %v: nil attributes: %w", q, verbs.ErrInvalid)
	}
	var rep proto.QPStateReply
	_, err := q.d.call(proto.OpModifyQP, &proto.ModifyQPReq{QP: q.h, Mask: mask, Attr: *attr}, nil, &rep)
	return err
}

// Query returns the QP's attributes.
func (q *QP) Query() (verbs.QPAttr, error) {
	var rep proto.QueryQPReply
	if _, err := q.d.call(proto.OpQueryQP, &proto.Handle{H: q.h}, nil, &rep); err != nil {
		return verbs.QPAttr{}, err
	}
	return rep.Attr, nil
}

// Destroy destroys the QP.
func (q *QP) Destroy() error {
	if q.dead.Load() {
		return fmt.Errorf("rnicd: destroy %v: %w", q, verbs.ErrDestroyed)
	}
	_, err := q.d.call(proto.OpDestroyQP, &proto.Handle{H: q.h}, nil, &proto.Empty{})
	if err != nil && q.d.goneError() == nil {
		return err
	}
	q.d.mu.Lock()
	delete(q.d.qps, q.h)
	q.d.mu.Unlock()
	q.release()
	return err
}

// retire ends the QP's use: posts fail. The rings
// stay mapped.
func (q *QP) retire() {
	q.retired.Do(func() {
		q.sqMu.Lock()
		q.rqMu.Lock()
		q.dead.Store(true)
		q.rqMu.Unlock()
		q.sqMu.Unlock()
	})
}

// release retires the QP and gives up its rings (unmapped if they have a
// chunk of their own).
func (q *QP) release() {
	q.retire()
	q.released.Do(q.mem.release)
}

// ring rings the doorbell if the daemon's drainer sleeps. The caller
// holds sqMu or rqMu and has checked that the QP is not dead.
func (q *QP) ring() {
	if q.rings.Sleeping.Load() != 0 {
		q.d.bell.ring(q.bell)
	}
}
