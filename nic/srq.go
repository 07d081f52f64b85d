// Shared receive queues (ibv_create_srq, ibv_modify_srq, ibv_post_srq_recv)
// with the SRQ limit event: once armed with a limit, the first Pop that
// leaves fewer WQEs than the limit raises EventSRQLimitReached and disarms
// the SRQ (ibv_modify_srq(3): the event fires when the number of WRs in
// the SRQ drops below the limit, then the limit must be armed again; Linux
// rxe checks after each WQE it takes, as here). A limit already undercut
// when armed fires on the next Pop.

package nic

import (
	"sync/atomic"

	"github.com/rnic/rnic/nic/verbs"
)

// SRQ is a shared receive queue. It implements verbs.RecvQueue.
type SRQ struct {
	d      *Device
	pd     *PD
	maxSGE int
	// qps is the attached QPs, copied on write so Post reads it without a
	// lock.
	qps atomic.Pointer[[]*QP]

	recvRing // holds mu, which also guards the fields below
	limit    int
	refs     int // attached QPs
	dead     bool
}

var _ verbs.RecvQueue = (*SRQ)(nil)

// CreateSRQ creates an SRQ in pd holding maxWR WQEs of up to maxSGE SGEs
// each (ibv_create_srq). As in verbs the limit is not armed at creation;
// arm it with ModifySRQ.
func (d *Device) CreateSRQ(pd *PD, maxWR, maxSGE int) (*SRQ, error) {
	if maxWR < 1 || maxWR > d.limits.MaxSRQWR {
		return nil, errorf(verbs.ErrInvalid, "create SRQ: max_wr %d, must be 1..%d", maxWR, d.limits.MaxSRQWR)
	}
	if maxSGE < 1 || maxSGE > d.limits.MaxSRQSGE {
		return nil, errorf(verbs.ErrInvalid, "create SRQ: max_sge %d, must be 1..%d", maxSGE, d.limits.MaxSRQSGE)
	}
	d.mu.Lock()
	err := d.reserve(&d.srqs, d.limits.MaxSRQ, "SRQ")
	d.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if err := pd.acquire(d); err != nil {
		d.release(&d.srqs)
		return nil, err
	}
	s := &SRQ{d: d, pd: pd, maxSGE: maxSGE, recvRing: newRecvRing(maxWR)}
	s.qps.Store(new([]*QP))
	return s, nil
}

// PD returns the SRQ's protection domain.
func (s *SRQ) PD() *PD { return s.pd }

// Query returns the SRQ's attributes (ibv_query_srq).
func (s *SRQ) Query() verbs.SRQAttr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return verbs.SRQAttr{MaxWR: len(s.ring), MaxSGE: s.maxSGE, Limit: s.limit}
}

// ModifySRQ resizes the SRQ (SRQMaxWR) and/or arms its limit (SRQLimit;
// a limit of 0 disarms it) (ibv_modify_srq). The limit must not exceed
// max_wr; the new max_wr must hold the WQEs already posted.
func (s *SRQ) ModifySRQ(attr verbs.SRQAttr, mask verbs.SRQAttrMask) error {
	if mask&^(verbs.SRQMaxWR|verbs.SRQLimit) != 0 {
		return errorf(verbs.ErrInvalid, "modify SRQ: unknown mask bits %#x", uint8(mask&^(verbs.SRQMaxWR|verbs.SRQLimit)))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dead {
		return errorf(verbs.ErrDestroyed, "modify SRQ")
	}
	maxWR := len(s.ring)
	if mask&verbs.SRQMaxWR != 0 {
		if attr.MaxWR < 1 || attr.MaxWR > s.d.limits.MaxSRQWR {
			return errorf(verbs.ErrInvalid, "modify SRQ: max_wr %d, must be 1..%d", attr.MaxWR, s.d.limits.MaxSRQWR)
		}
		if attr.MaxWR < s.n {
			return errorf(verbs.ErrInvalid, "modify SRQ: max_wr %d below the %d WQEs posted", attr.MaxWR, s.n)
		}
		// rxe's rule: an armed limit must stay within the new size.
		if mask&verbs.SRQLimit == 0 && attr.MaxWR < s.limit {
			return errorf(verbs.ErrInvalid, "modify SRQ: max_wr %d below the armed limit %d", attr.MaxWR, s.limit)
		}
		maxWR = attr.MaxWR
	}
	if mask&verbs.SRQLimit != 0 && (attr.Limit < 0 || attr.Limit > maxWR) {
		return errorf(verbs.ErrInvalid, "modify SRQ: limit %d, must be 0..max_wr %d", attr.Limit, maxWR)
	}
	if maxWR != len(s.ring) {
		s.resize(maxWR)
	}
	if mask&verbs.SRQLimit != 0 {
		s.limit = attr.Limit
	}
	return nil
}

// PostRecv posts receive WRs to the SRQ (ibv_post_srq_recv). WRs are
// checked and posted in order; on the first failure the error is a
// *verbs.PostError naming it and the rest are not posted. When the SRQ was empty,
// the engines of the attached QPs are told (Engine.RecvPosted), as one may
// be waiting for a WQE; while it holds WQEs they are not, since a
// responder only waits on an empty queue and SRQ QPs advertise no credits.
func (s *SRQ) PostRecv(wrs ...*verbs.RecvWR) error {
	s.mu.Lock()
	if s.dead {
		s.mu.Unlock()
		return errorf(verbs.ErrDestroyed, "post SRQ recv")
	}
	wasEmpty := s.n == 0
	var err error
	for i, wr := range wrs {
		if e := checkRecvWR(wr, s.maxSGE); e != nil {
			err = &verbs.PostError{Index: i, WRID: wrID(wr), Err: e}
			break
		}
		if s.n == len(s.ring) {
			err = &verbs.PostError{Index: i, WRID: wr.ID, Err: errorf(verbs.ErrQueueFull, "SRQ holds its max_wr %d WQEs", len(s.ring))}
			break
		}
		s.push(wr)
	}
	posted := s.n > 0
	s.mu.Unlock()
	if wasEmpty && posted {
		for _, qp := range *s.qps.Load() {
			qp.eng.RecvPosted()
		}
	}
	return err
}

// Pop implements verbs.RecvQueue, raising the limit event when due.
func (s *SRQ) Pop() (verbs.RecvWR, bool) {
	wr, ok, _ := s.PopFit(0)
	return wr, ok
}

// PopFit implements verbs.RecvQueue, raising the limit event when due.
func (s *SRQ) PopFit(n uint64) (verbs.RecvWR, bool, bool) {
	s.mu.Lock()
	if s.n == 0 {
		s.mu.Unlock()
		return verbs.RecvWR{}, false, false
	}
	if !s.fits(n) {
		s.mu.Unlock()
		return verbs.RecvWR{}, true, false
	}
	wr, _ := s.pop()
	fire := s.limit > 0 && s.n < s.limit
	if fire {
		s.limit = 0
	}
	s.mu.Unlock()
	if fire {
		s.d.events.raise(Event{Type: verbs.EventSRQLimitReached, SRQ: s})
	}
	return wr, true, true
}

// Len implements verbs.RecvQueue.
func (s *SRQ) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// Destroy destroys the SRQ (ibv_destroy_srq), discarding its WQEs. It
// fails with verbs.ErrBusy while QPs are attached.
func (s *SRQ) Destroy() error {
	s.mu.Lock()
	if s.dead {
		s.mu.Unlock()
		return errorf(verbs.ErrDestroyed, "destroy SRQ")
	}
	if s.refs > 0 {
		n := s.refs
		s.mu.Unlock()
		return errorf(verbs.ErrBusy, "destroy SRQ: %d QPs attached", n)
	}
	s.dead = true
	s.clear()
	s.mu.Unlock()
	s.pd.put()
	s.d.release(&s.d.srqs)
	return nil
}

// acquire records a QP about to be attached, so the SRQ cannot be
// destroyed while the QP is being created.
func (s *SRQ) acquire(d *Device) error {
	if s.d != d {
		return errorf(verbs.ErrInvalid, "SRQ is not an SRQ of %s", d.name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dead {
		return errorf(verbs.ErrDestroyed, "SRQ")
	}
	s.refs++
	return nil
}

// put drops a reference taken by acquire.
func (s *SRQ) put() {
	s.mu.Lock()
	s.refs--
	s.mu.Unlock()
}

// attach adds qp, whose engine exists, to the QPs PostRecv notifies.
func (s *SRQ) attach(qp *QP) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := *s.qps.Load()
	qps := append(old[:len(old):len(old)], qp)
	s.qps.Store(&qps)
}

// detach removes qp and drops its reference.
func (s *SRQ) detach(qp *QP) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refs--
	old := *s.qps.Load()
	qps := make([]*QP, 0, len(old))
	for _, q := range old {
		if q != qp {
			qps = append(qps, q)
		}
	}
	s.qps.Store(&qps)
}

func wrID(wr *verbs.RecvWR) uint64 {
	if wr == nil {
		return 0
	}
	return wr.ID
}
