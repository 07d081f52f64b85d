// Shared receive queues: PostRecv writes into the SRQ's ring as a QP's
// receive queue does.

package client

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/verbs"
)

// SRQ is a shared receive queue of the daemon.
type SRQ struct {
	d      *Device
	h      uint32
	maxSGE int
	mem    ringRef
	rings  *proto.WorkRings
	bell   uint32 // the SRQ's bit in the session doorbell

	mu   sync.Mutex
	prod uint32

	dead     atomic.Bool
	retired  sync.Once
	released sync.Once
}

var _ ibv.SRQ = (*SRQ)(nil)

// CreateSRQ creates an SRQ of maxWR WRs of up to maxSGE SGEs.
func (d *Device) CreateSRQ(pd ibv.PD, maxWR, maxSGE int) (ibv.SRQ, error) {
	p, err := d.pd(pd)
	if err != nil {
		return nil, err
	}
	if maxWR <= 0 || maxSGE <= 0 || maxWR > proto.MaxRingSlots || maxSGE > proto.MaxSlotSize {
		return nil, fmt.Errorf("rnicd: create SRQ of %d WRs of %d SGEs: %w", maxWR, maxSGE, verbs.ErrInvalid)
	}
	rep := proto.CreateSRQReply{}
	d.arena.mu.Lock()
	fds, err := d.call(proto.OpCreateSRQ, &proto.CreateSRQReq{PD: p.h, MaxWR: uint32(maxWR), MaxSGE: uint32(maxSGE)}, nil, &rep)
	if err != nil {
		d.arena.mu.Unlock()
		return nil, err
	}
	s := &SRQ{d: d, h: rep.SRQ, maxSGE: maxSGE}
	err = s.setup(&rep, fds)
	d.arena.mu.Unlock()
	if err != nil {
		d.call(proto.OpDestroySRQ, &proto.Handle{H: rep.SRQ}, nil, &proto.Empty{})
		s.mem.release()
		return nil, err
	}
	d.mu.Lock()
	d.srqs[s.h] = s
	d.mu.Unlock()
	if d.goneError() != nil {
		s.retire() // the reader has retired the others already
	}
	return s, nil
}

func (s *SRQ) setup(rep *proto.CreateSRQReply, fds []int) (err error) {
	s.mem, s.rings, err = s.d.mapWorkRings("CREATE_SRQ", rep.Ring, rep.Place, fds)
	if err == nil {
		s.bell = s.rings.Bell.Load()
	}
	return err
}

// PostRecv posts receive WRs to the SRQ.
func (s *SRQ) PostRecv(wrs ...*verbs.RecvWR) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.d.goneError(); err != nil {
		return err
	}
	if s.dead.Load() {
		return fmt.Errorf("rnicd: post SRQ recv: %w", verbs.ErrDestroyed)
	}
	err := postRecv(&s.rings.RQ, &s.prod, s.maxSGE, wrs, s)
	// QPs using the SRQ may be receiving now.
	s.d.waitRecvs(s.rings, s.prod)
	return err
}

// ring rings the doorbell if the daemon's drainer sleeps; the caller
// holds mu.
func (s *SRQ) ring() {
	if s.rings.Sleeping.Load() != 0 {
		s.d.bell.ring(s.bell)
	}
}

// Destroy destroys the SRQ.
func (s *SRQ) Destroy() error {
	if s.dead.Load() {
		return fmt.Errorf("rnicd: destroy SRQ: %w", verbs.ErrDestroyed)
	}
	_, err := s.d.call(proto.OpDestroySRQ, &proto.Handle{H: s.h}, nil, &proto.Empty{})
	if err != nil && s.d.goneError() == nil {
		return err
	}
	s.d.mu.Lock()
	delete(s.d.srqs, s.h)
	s.d.mu.Unlock()
	s.release()
	return err
}

// retire ends the SRQ's use; its ring stays mapped.
func (s *SRQ) retire() {
	s.retired.Do(func() {
		s.mu.Lock()
		s.dead.Store(true)
		s.mu.Unlock()
	})
}

// release retires the SRQ and gives up its ring (unmapped if it has a
// chunk of its own).
func (s *SRQ) release() {
	s.retire()
	s.released.Do(s.mem.release)
}
