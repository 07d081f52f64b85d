// Ring layouts. The daemon creates a ring's memory (a sealed memfd it sizes
// from the object's validated capabilities) and sends its layout with the
// fd; the client maps it. Indices are free-running uint32s, each on a cache
// line of its own so the two sides do not false-share; slot i is at
// i & (slots − 1).
//
// Work rings (a QP's send and receive queues, an SRQ's receive queue):
//
//	offset  owner   field
//	0       client  SQ producer: WQEs written up to here
//	64      client  RQ producer
//	128     daemon  SQ consumer: WQEs taken (posted to the NIC) up to here
//	192     daemon  RQ consumer
//	256     daemon  sleeping: 1 while the drainer sleeps; write the doorbell
//	320     daemon  QP state (verbs.QPState) as the daemon last saw it
//	384     daemon  RQ done: every receive WQE before it is in the NIC's
//	                queue, or that queue is full
//	448     daemon  bell: the object's bit in the session doorbell
//	                (bell.go)
//	512     SQ slots (SQSlots × SQSlotSize), then RQ slots (RQSlots × RQSlotSize)
//
// An SRQ uses the RQ fields and has no SQ slots.
//
// Completion rings:
//
//	offset  owner   field
//	0       daemon  producer: completions written up to here
//	64      client  consumer: completions polled up to here
//	128     both    arm: ArmNext or ArmSolicited, set by ReqNotify; the
//	                daemon clears it when it fires the CQ's notifier
//	192     daemon  mover state: MoverSolicited, MoverWantsSpace
//	256     daemon  flags: FlagOverrun once the CQ overran
//	512     slots (Slots × WCSlotLen)
//
// A receive WQE must be in the NIC when a message for it arrives (a UD
// datagram finding no receive is dropped): once its QP can receive, a
// client's PostRecv returns when RQ done has passed its WQEs.
//
// The client's doorbell handshake (virtio-style event suppression): it
// writes WQEs, stores the producer index, then loads sleeping and rings
// the doorbell only if it is 1 (by setting its bit in the session doorbell
// and sending a byte on the session's doorbell socket, bell.go). The daemon's drainer stores
// sleeping = 1, loads the producer indices again and sleeps only if they
// show nothing new. Go's atomics are sequentially consistent, so one of the
// two sees the other's store.

package proto

import (
	"errors"
	"fmt"
	"math/bits"
	"sync/atomic"
	"unsafe"
)

// Layout constants.
//
//rnicd:cheader
const (
	CacheLine     = 64
	RingHeaderLen = 512
	// MaxRingSlots bounds the slots of one ring.
	MaxRingSlots = 1 << 21
	// MaxSlotSize bounds one WQE slot.
	MaxSlotSize = 64 << 10
)

// Work ring header offsets.
//
//rnicd:cheader
const (
	ringSQProd   = 0 * CacheLine
	ringRQProd   = 1 * CacheLine
	ringSQCons   = 2 * CacheLine
	ringRQCons   = 3 * CacheLine
	ringSleeping = 4 * CacheLine
	ringState    = 5 * CacheLine
	ringRQDone   = 6 * CacheLine
	ringBell     = 7 * CacheLine
)

// Completion ring header offsets.
//
//rnicd:cheader
const (
	cqProd  = 0 * CacheLine
	cqCons  = 1 * CacheLine
	cqArm   = 2 * CacheLine
	cqMover = 3 * CacheLine
	cqFlags = 4 * CacheLine
)

// Completion ring arm values.
//
//rnicd:cheader
const (
	ArmNone      = 0
	ArmNext      = 1 // the next completion fires the CQ's event
	ArmSolicited = 2 // the next solicited or unsuccessful one does
)

// Completion ring mover state bits.
//
//rnicd:cheader
const (
	// MoverSolicited: the daemon's CQ is armed for solicited completions
	// only. A client arming the other kind than the bit says asks the
	// daemon to re-arm (OpArmCQ).
	MoverSolicited = 1 << 0
	// MoverWantsSpace: the ring is full and completions wait in the
	// daemon; a client that polls must kick it.
	MoverWantsSpace = 1 << 1
)

// FlagOverrun in a completion ring's flags: the CQ overran (CQ_ERR).
//
//rnicd:cheader
const FlagOverrun = 1 << 0

// ErrRingIndex is wrapped when a producer index is out of range.
var ErrRingIndex = errors.New("rnicd: ring index out of range")

// RingSlots returns the slots of a ring holding n entries: the next power
// of two, 0 for 0, and 0 as well beyond 1<<31 (no valid ring).
func RingSlots(n uint32) uint32 {
	if n == 0 || n > 1<<31 {
		return 0
	}
	return 1 << bits.Len32(n-1)
}

func roundLine(n uint64) uint64 { return (n + CacheLine - 1) &^ (CacheLine - 1) }

// SendSlotSize is the size of a send WQE slot holding maxSGE SGEs or
// maxInline bytes of inline data, or 0 if it would exceed MaxSlotSize.
func SendSlotSize(maxSGE, maxInline uint32) uint32 {
	n := roundLine(SendWQEHeaderLen + max(uint64(maxSGE)*SGELen, uint64(maxInline)))
	if n > MaxSlotSize {
		return 0
	}
	return uint32(n)
}

// RecvSlotSize is the size of a receive WQE slot holding maxSGE SGEs, or 0
// if it would exceed MaxSlotSize.
func RecvSlotSize(maxSGE uint32) uint32 {
	n := roundLine(RecvWQEHeaderLen + uint64(maxSGE)*SGELen)
	if n > MaxSlotSize {
		return 0
	}
	return uint32(n)
}

// RingLayout is the geometry of a work ring's memory. Cap is how many
// WQEs the client may have in the ring (the queue's max WR), at most
// Slots.
type RingLayout struct {
	SQSlots, SQSlotSize, SQCap uint32
	RQSlots, RQSlotSize, RQCap uint32
}

// Size returns the bytes of memory the layout needs.
func (l RingLayout) Size() uint64 {
	return RingHeaderLen + uint64(l.SQSlots)*uint64(l.SQSlotSize) + uint64(l.RQSlots)*uint64(l.RQSlotSize)
}

func checkRing(which string, slots, slotSize, capacity, minSlot uint32) error {
	switch {
	case slots == 0 && capacity == 0:
		return nil
	case slots&(slots-1) != 0 || slots > MaxRingSlots:
		return fmt.Errorf("%w: %s ring of %d slots", ErrMalformed, which, slots)
	case capacity > slots || capacity == 0:
		return fmt.Errorf("%w: %s ring holds %d WQEs in %d slots", ErrMalformed, which, capacity, slots)
	case slotSize%CacheLine != 0 || slotSize < minSlot || slotSize > MaxSlotSize:
		return fmt.Errorf("%w: %s slot of %d bytes", ErrMalformed, which, slotSize)
	}
	return nil
}

// Validate checks that the layout is one the daemon could have made.
func (l RingLayout) Validate() error {
	if err := checkRing("send", l.SQSlots, l.SQSlotSize, l.SQCap, SendWQEHeaderLen); err != nil {
		return err
	}
	return checkRing("receive", l.RQSlots, l.RQSlotSize, l.RQCap, RecvWQEHeaderLen)
}

func (l *RingLayout) Encode(w *Writer) {
	for _, v := range []uint32{l.SQSlots, l.SQSlotSize, l.SQCap, l.RQSlots, l.RQSlotSize, l.RQCap} {
		w.U32(v)
	}
}

func (l *RingLayout) Decode(r *Reader) {
	for _, p := range []*uint32{&l.SQSlots, &l.SQSlotSize, &l.SQCap, &l.RQSlots, &l.RQSlotSize, &l.RQCap} {
		*p = r.U32()
	}
}

// CQLayout is the geometry of a completion ring: Cap completions (the CQ's
// cqe) in Slots slots.
type CQLayout struct{ Slots, Cap uint32 }

// Size returns the bytes of memory the layout needs.
func (l CQLayout) Size() uint64 { return RingHeaderLen + uint64(l.Slots)*WCSlotLen }

// Validate checks that the layout is one the daemon could have made.
func (l CQLayout) Validate() error {
	if l.Slots == 0 || l.Slots&(l.Slots-1) != 0 || l.Slots > MaxRingSlots || l.Cap == 0 || l.Cap > l.Slots {
		return fmt.Errorf("%w: completion ring of %d entries in %d slots", ErrMalformed, l.Cap, l.Slots)
	}
	return nil
}

func (l *CQLayout) Encode(w *Writer) { w.U32(l.Slots); w.U32(l.Cap) }
func (l *CQLayout) Decode(r *Reader) { l.Slots = r.U32(); l.Cap = r.U32() }

// u32At returns the uint32 at mem[off] for atomic access; off is a
// multiple of 4 inside mem (the layouts guarantee it).
func u32At(mem []byte, off int) *atomic.Uint32 {
	_ = mem[off+3]
	return (*atomic.Uint32)(unsafe.Pointer(&mem[off]))
}

// WorkRing is a view of one send or receive ring.
type WorkRing struct {
	Prod, Cons *atomic.Uint32
	slots      []byte
	slotSize   uint32
	mask       uint32
	// Cap is the most WQEs the client may have in the ring.
	Cap uint32
}

// Slots returns the number of slots (0 for a ring that does not exist).
func (r *WorkRing) Slots() uint32 {
	if r.slotSize == 0 {
		return 0
	}
	return r.mask + 1
}

// SlotSize returns the size of a slot.
func (r *WorkRing) SlotSize() uint32 { return r.slotSize }

// Slot returns slot i mod Slots. It must not be called on a ring without
// slots.
func (r *WorkRing) Slot(i uint32) []byte {
	o := (i & r.mask) * r.slotSize
	return r.slots[o : o+r.slotSize : o+r.slotSize]
}

// CheckProducer checks a producer index read from shared memory against
// the reader's own consumer index: the producer may be at most Slots
// ahead. It returns how many WQEs are waiting.
func (r *WorkRing) CheckProducer(prod, cons uint32) (uint32, error) {
	n := prod - cons
	if n > r.Slots() {
		return 0, fmt.Errorf("%w: producer %d is %d ahead of consumer %d in a ring of %d slots",
			ErrRingIndex, prod, int32(n), cons, r.Slots())
	}
	return n, nil
}

// WorkRings is a view of a QP's or SRQ's ring memory.
type WorkRings struct {
	SQ, RQ WorkRing
	// Sleeping is 1 while the daemon's drainer sleeps.
	Sleeping *atomic.Uint32
	// State is the QP state as the daemon last saw it.
	State *atomic.Uint32
	// RQDone: receive WQEs before it are in the NIC (or its queue is
	// full).
	RQDone *atomic.Uint32
	// Bell is the object's bit in the session doorbell.
	Bell *atomic.Uint32
}

// NewWorkRings returns the view of mem laid out as l, which must be valid.
func NewWorkRings(mem []byte, l RingLayout) (*WorkRings, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	if uint64(len(mem)) < l.Size() {
		return nil, fmt.Errorf("%w: ring memory of %d bytes, layout needs %d", ErrMalformed, len(mem), l.Size())
	}
	sqEnd := RingHeaderLen + int(l.SQSlots)*int(l.SQSlotSize)
	rqEnd := sqEnd + int(l.RQSlots)*int(l.RQSlotSize)
	w := &WorkRings{
		SQ: WorkRing{Prod: u32At(mem, ringSQProd), Cons: u32At(mem, ringSQCons),
			slots: mem[RingHeaderLen:sqEnd:sqEnd], Cap: l.SQCap},
		RQ: WorkRing{Prod: u32At(mem, ringRQProd), Cons: u32At(mem, ringRQCons),
			slots: mem[sqEnd:rqEnd:rqEnd], Cap: l.RQCap},
		Sleeping: u32At(mem, ringSleeping),
		State:    u32At(mem, ringState),
		RQDone:   u32At(mem, ringRQDone),
		Bell:     u32At(mem, ringBell),
	}
	if l.SQSlots > 0 {
		w.SQ.slotSize, w.SQ.mask = l.SQSlotSize, l.SQSlots-1
	}
	if l.RQSlots > 0 {
		w.RQ.slotSize, w.RQ.mask = l.RQSlotSize, l.RQSlots-1
	}
	return w, nil
}

// CQRing is a view of a completion ring.
type CQRing struct {
	Prod, Cons, Arm, Mover, Flags *atomic.Uint32
	slots                         []byte
	mask                          uint32
	// Cap is the most completions the daemon puts in the ring.
	Cap uint32
}

// NewCQRing returns the view of mem laid out as l.
func NewCQRing(mem []byte, l CQLayout) (*CQRing, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	if uint64(len(mem)) < l.Size() {
		return nil, fmt.Errorf("%w: ring memory of %d bytes, layout needs %d", ErrMalformed, len(mem), l.Size())
	}
	end := RingHeaderLen + int(l.Slots)*WCSlotLen
	return &CQRing{
		Prod: u32At(mem, cqProd), Cons: u32At(mem, cqCons), Arm: u32At(mem, cqArm),
		Mover: u32At(mem, cqMover), Flags: u32At(mem, cqFlags),
		slots: mem[RingHeaderLen:end:end], mask: l.Slots - 1, Cap: l.Cap,
	}, nil
}

// Slots returns the number of slots.
func (r *CQRing) Slots() uint32 { return r.mask + 1 }

// Slot returns slot i mod Slots.
func (r *CQRing) Slot(i uint32) []byte {
	o := (i & r.mask) * WCSlotLen
	return r.slots[o : o+WCSlotLen : o+WCSlotLen]
}
