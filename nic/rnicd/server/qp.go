// Queue pairs: the daemon's ibv QP, the client's work rings and their
// drainer. A client error on the rings moves the QP to ERR and raises
// QP_FATAL for the client, as a NIC does on a malformed WQE.

package server

import (
	"fmt"
	"net/netip"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/verbs"
)

func init() {
	Register(proto.OpCreateQP, handleCreateQP)
	Register(proto.OpDestroyQP, handleDestroy[*qpObj](kindQP))
	Register(proto.OpModifyQP, handleModifyQP)
	Register(proto.OpQueryQP, handleQueryQP)
	Register(proto.OpQPState, handleQPState)
}

type qpObj struct {
	s     *Session
	h     uint32
	qp    ibv.QP
	mem   *ringMem
	rings *proto.WorkRings
	d     *drainer
	queue uint64 // queue state charged to the uid's budget (queueBytes)
	// groups are the multicast groups the client attached the QP to
	// (ops_mcast.go); the session's handlers alone touch it.
	groups map[netip.Addr]struct{}
}

func (q *qpObj) kind() objKind     { return kindQP }
func (q *qpObj) handle() uint32    { return q.h }
func (q *qpObj) session() *Session { return q.s }

// event publishes the state an event may have changed.
func (q *qpObj) event(verbs.AsyncEvent) { q.rings.State.Store(uint32(q.qp.State())) }

func (q *qpObj) destroy(s *Session, reaping bool) error {
	if !reaping && len(q.groups) > 0 {
		return fmt.Errorf("rnicd: destroy QP %#x: attached to %d multicast groups: %w", q.qp.QPN(), len(q.groups), verbs.ErrBusy)
	}
	q.d.halt()
	if reaping {
		// As a dead host's QP: in ERR, so nothing more leaves it,
		// before it goes.
		q.qp.Modify(&verbs.QPAttr{State: verbs.QPSErr}, verbs.AttrState)
	}
	if err := q.qp.Destroy(); err != nil {
		q.d.start()
		return err
	}
	q.d.bell.close()
	s.dev.disown(q.qp)
	if !reaping {
		// Everything the QP completed is in the rings before the reply:
		// the client cleans its CQs of them (the drop-in's ibv_destroy_qp).
		s.settleCQs()
	}
	q.mem.free()
	s.unreserve(kindQP, 0)
	s.give(mapped{qps: 1, queue: q.queue})
	return nil
}

// clientError moves the QP to ERR and tells the client (QP_FATAL). It runs
// on the drainer with its lock held.
func (q *qpObj) clientError(err error) {
	q.s.complain("QP %#x: %v; QP moved to ERR", q.qp.QPN(), err)
	if q.qp.State() != verbs.QPSErr {
		q.qp.Modify(&verbs.QPAttr{State: verbs.QPSErr}, verbs.AttrState)
	}
	q.rings.State.Store(uint32(q.qp.State()))
	q.s.SendEvent(proto.OpEvent, &proto.Event{Type: verbs.EventQPFatal, Object: proto.ObjectQP, Handle: q.h, Port: 1})
}

// drainUDSends posts what the session's UD QPs' send rings hold before one
// of its AHs goes. A WQE the client posted before ibv_destroy_ah names the
// AH as it was: a NIC copies the address vector into the WQE when it is
// posted (rxe, mlx5), so a program may destroy the AH right after posting
// (mckey's sender does), and a drainer that had not yet taken the WQE
// would otherwise find the handle gone and refuse it.
func (s *Session) drainUDSends() {
	for _, o := range s.objectsOf(kindQP) {
		d := o.(*qpObj).d
		if !d.ud || d.postSend == nil || d.rings.SQ.Slots() == 0 {
			continue
		}
		d.mu.Lock()
		d.drainSend()
		d.mu.Unlock()
	}
}

// addressVector returns the address vector of the session's AH h, for a
// UD WQE.
func (s *Session) addressVector(h uint32) (*verbs.AddressVector, error) {
	a, err := lookup[*ahObj](s, h, kindAH)
	if err != nil {
		return nil, fmt.Errorf("%w: UD WQE: %w", proto.ErrMalformed, err)
	}
	return a.ah.AV(), nil
}

// qpLayout sizes the rings of a QP created with cap.
func qpLayout(cap verbs.QPCap, srq bool) (proto.RingLayout, error) {
	l := proto.RingLayout{SQSlots: proto.RingSlots(cap.MaxSendWR), SQCap: cap.MaxSendWR}
	if l.SQSlots > 0 {
		if l.SQSlotSize = proto.SendSlotSize(cap.MaxSendSGE, cap.MaxInlineData); l.SQSlotSize == 0 {
			return l, fmt.Errorf("rnicd: send WQEs of %d SGEs or %d inline bytes exceed %d bytes: %w",
				cap.MaxSendSGE, cap.MaxInlineData, proto.MaxSlotSize, verbs.ErrInvalid)
		}
	}
	if !srq {
		l.RQSlots, l.RQCap = proto.RingSlots(cap.MaxRecvWR), cap.MaxRecvWR
		if l.RQSlots > 0 {
			if l.RQSlotSize = proto.RecvSlotSize(cap.MaxRecvSGE); l.RQSlotSize == 0 {
				return l, fmt.Errorf("rnicd: receive WQEs of %d SGEs exceed %d bytes: %w",
					cap.MaxRecvSGE, proto.MaxSlotSize, verbs.ErrInvalid)
			}
		}
	}
	if l.SQSlots > proto.MaxRingSlots || l.RQSlots > proto.MaxRingSlots {
		return l, fmt.Errorf("rnicd: queues of %d/%d WRs exceed the %d a ring holds: %w",
			cap.MaxSendWR, cap.MaxRecvWR, proto.MaxRingSlots, verbs.ErrInvalid)
	}
	return l, l.Validate()
}

func handleCreateQP(s *Session, req *Request, rep *Reply) error {
	var m proto.CreateQPReq
	if err := req.Decode(&m); err != nil {
		return err
	}
	pd, err := lookup[*pdObj](s, m.PD, kindPD)
	if err != nil {
		return err
	}
	init, err := qpInit(s, &m)
	if err != nil {
		return err
	}
	if err := s.canRing(m.Cap, init.SRQ != nil); err != nil {
		return err
	}
	// The engines allocate the queues whole when the QP is made: charge
	// them first.
	cost := queueBytes(m.Cap)
	if err := s.take(mapped{qps: 1, queue: cost}); err != nil {
		return err
	}
	q, layout, err := createQPObj(s, pd, init, m.Type == verbs.QPTypeUD)
	if err != nil {
		s.give(mapped{qps: 1, queue: cost})
		return err
	}
	q.queue = cost
	q.h = s.newHandle()
	qp := q.qp
	s.dev.own(qp, q)
	s.insert(q)
	q.d.start()
	rep.Set(&proto.CreateQPReply{QP: q.h, QPN: qp.QPN(), Cap: qp.Cap(), Ring: layout, Place: q.mem.place()},
		append(q.mem.fds(), q.d.bell.fds()...)...)
	rep.After(q.mem.sent)
	return nil
}

// createQPObj makes the QP and its rings, and returns their layout.
func createQPObj(s *Session, pd *pdObj, init ibv.QPInit, ud bool) (*qpObj, proto.RingLayout, error) {
	qp, err := s.dev.dev.CreateQP(pd.pd, init)
	if err != nil {
		return nil, proto.RingLayout{}, err
	}
	layout, err := qpLayout(qp.Cap(), init.SRQ != nil)
	if err == nil {
		err = s.reserve(kindQP, 0)
	}
	if err != nil {
		qp.Destroy()
		return nil, layout, err
	}
	q, err := newQPObj(s, qp, layout, ud)
	return q, layout, err
}

// qpInit finds the CQs (and SRQ) a create QP request names.
func qpInit(s *Session, m *proto.CreateQPReq) (ibv.QPInit, error) {
	scq, err := lookup[*cqObj](s, m.SendCQ, kindCQ)
	if err != nil {
		return ibv.QPInit{}, err
	}
	rcq, err := lookup[*cqObj](s, m.RecvCQ, kindCQ)
	if err != nil {
		return ibv.QPInit{}, err
	}
	init := ibv.QPInit{Type: m.Type, SendCQ: scq.cq, RecvCQ: rcq.cq, Cap: m.Cap, SigAll: m.SigAll}
	if m.SRQ != 0 {
		srq, err := lookup[*srqObj](s, m.SRQ, kindSRQ)
		if err != nil {
			return ibv.QPInit{}, err
		}
		init.SRQ = srq.srq
	}
	return init, nil
}

// canRing checks that the rings of the capabilities asked for fit, and
// fit the session's budget: they bound the work before the NIC judges
// them; the NIC's answer sizes the real ones.
func (s *Session) canRing(cap verbs.QPCap, srq bool) error {
	if cap.MaxSendWR > proto.MaxRingSlots || cap.MaxRecvWR > proto.MaxRingSlots {
		return fmt.Errorf("rnicd: create QP: queues of %d/%d WRs exceed the %d a ring holds: %w",
			cap.MaxSendWR, cap.MaxRecvWR, proto.MaxRingSlots, verbs.ErrInvalid)
	}
	l, err := qpLayout(cap, srq)
	if err != nil {
		return err
	}
	if err := s.reserve(kindQP, 0); err != nil {
		return err
	}
	s.unreserve(kindQP, 0)
	return s.checkRing(l.Size())
}

// newQPObj places qp's work rings (layout; the QP reserved by the caller) and
// readies the drainer that posts what the client writes into them. On an
// error qp is destroyed and the reservation returned.
func newQPObj(s *Session, qp ibv.QP, layout proto.RingLayout, ud bool) (*qpObj, error) {
	q := &qpObj{s: s, qp: qp}
	fail := func(err error) (*qpObj, error) {
		qp.Destroy()
		if q.mem != nil {
			q.mem.free()
		}
		s.unreserve(kindQP, 0)
		return nil, err
	}
	var err error
	if q.mem, err = s.newRingMem(layout.Size()); err != nil {
		return fail(err)
	}
	if q.rings, err = proto.NewWorkRings(q.mem.mem, layout); err != nil {
		return fail(err)
	}
	bell, err := s.newWaker(q.rings)
	if err != nil {
		return fail(err)
	}
	q.d = newDrainer(s, q.rings, bell)
	q.d.ud = ud
	q.d.postSend = qp.PostSend
	q.d.postRecv = qp.PostRecv
	q.d.clientError = q.clientError
	q.rings.State.Store(uint32(qp.State()))
	if w, ok := qp.(ibv.StateWatcher); ok {
		// The CM moves the QP without the client asking. The rings
		// must say RTS before the peer can send (before the REP or MPA
		// Reply goes), or the client could receive the peer's first
		// message and fail to answer it while its accept is under way.
		w.WatchState(func(st verbs.QPState) { q.rings.State.Store(uint32(st)) })
	}
	return q, nil
}

func handleModifyQP(s *Session, req *Request, rep *Reply) error {
	var m proto.ModifyQPReq
	if err := req.Decode(&m); err != nil {
		return err
	}
	q, err := lookup[*qpObj](s, m.QP, kindQP)
	if err != nil {
		return err
	}
	// WQEs the client posted before it asked come before the change.
	q.d.mu.Lock()
	defer q.d.mu.Unlock()
	q.d.drain()
	err = q.qp.Modify(&m.Attr, m.Mask)
	if err == nil && m.Mask&verbs.AttrState != 0 && m.Attr.State == verbs.QPSReset {
		q.d.discard()
		s.settleCQs()
	}
	st := q.qp.State()
	q.rings.State.Store(uint32(st))
	if err != nil {
		return err
	}
	rep.Set(&proto.QPStateReply{State: st})
	return nil
}

func handleQueryQP(s *Session, req *Request, rep *Reply) error {
	var m proto.Handle
	if err := req.Decode(&m); err != nil {
		return err
	}
	q, err := lookup[*qpObj](s, m.H, kindQP)
	if err != nil {
		return err
	}
	a, err := q.qp.Query()
	if err != nil {
		return err
	}
	rep.Set(&proto.QueryQPReply{Attr: a})
	return nil
}

func handleQPState(s *Session, req *Request, rep *Reply) error {
	var m proto.Handle
	if err := req.Decode(&m); err != nil {
		return err
	}
	q, err := lookup[*qpObj](s, m.H, kindQP)
	if err != nil {
		return err
	}
	st := q.qp.State()
	q.rings.State.Store(uint32(st))
	rep.Set(&proto.QPStateReply{State: st})
	return nil
}
