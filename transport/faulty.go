// WithFaults: fault injection as a decorator around any Endpoint.
//
// The simulated link injects faults on its own wire; this wrapper brings the
// same faults (same configuration, same decisions for the same seed) to
// transports that have no notion of faults, such as a kernel UDP socket or
// a TAP device, so an engine can be tested against loss and reordering on a
// real wire too.
//
// Unlike the simulated link it may run with a real clock, so it is written
// for concurrency: timers may fire on their own goroutines, and in-order
// frames still leave in order because each direction hands frames on
// through a FIFO queue under a per-direction mutex.

package transport

import (
	"slices"
	"sync"
	"time"

	"github.com/rnic/rnic/transport/clock"
)

// FaultEndpoint is an Endpoint with fault injection in both directions:
// AtoB applies to the frames sent through it, BtoA to the frames it
// receives from the wrapped endpoint.
type FaultEndpoint struct {
	ep  Endpoint
	clk clock.Clock

	mu     sync.Mutex
	inj    *injector
	pipes  [2]pipe
	recv   func([]byte)
	closed bool

	// rec, if set, records what crosses the wrapper (Capture).
	rec   FrameRecorder
	stamp func() time.Time
}

// pipe orders one direction's in-order frames.
type pipe struct {
	// serial is held while a frame is handed on (to the wrapped endpoint's
	// Send, or to the receiver), so frames leave one at a time and in
	// queue order, and the receiver is never called concurrently.
	serial sync.Mutex
	// queue holds in-order copies not yet handed on, in release order;
	// guarded by FaultEndpoint.mu.
	queue []queued
	// last is the release time of the latest in-order copy, so that a
	// stalled frame holds back the frames behind it.
	last time.Duration
}

type queued struct {
	at    time.Duration
	frame []byte
	note  LinkNote
}

// WithFaults wraps ep with the faults of cfg, timed by clk and seeded by
// cfg.Seed. From then on ep's receiver belongs to the wrapper: install
// receivers on the returned endpoint only. Frames passed on without delay go
// straight through inside the call (Send returns the wrapped Send's error);
// delayed ones are handed on by clk's timers. WithFaults panics if cfg is
// invalid (see FaultConfig.Validate).
func WithFaults(ep Endpoint, clk clock.Clock, cfg FaultConfig) *FaultEndpoint {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	fe := &FaultEndpoint{ep: ep, clk: clk, inj: newInjector(cfg, cfg.Seed)}
	ep.SetReceiver(fe.arrive)
	return fe
}

// Send implements Endpoint.
func (fe *FaultEndpoint) Send(frame []byte) error {
	if len(frame) == 0 {
		return ErrEmptyFrame
	}
	buf := slices.Clone(frame)
	fe.mu.Lock()
	if fe.closed {
		fe.mu.Unlock()
		return ErrClosed
	}
	index := fe.inj.claim(AtoB)
	fe.mu.Unlock()
	return fe.inject(AtoB, buf, fe.inj.verdict(AtoB, index, buf))
}

// arrive is the wrapped endpoint's receiver.
func (fe *FaultEndpoint) arrive(frame []byte) {
	if len(frame) == 0 {
		return
	}
	buf := slices.Clone(frame) // frame is only valid during this call
	fe.mu.Lock()
	if fe.closed {
		fe.mu.Unlock()
		return
	}
	index := fe.inj.claim(BtoA)
	fe.mu.Unlock()
	_ = fe.inject(BtoA, buf, fe.inj.verdict(BtoA, index, buf))
}

// inject decides the frame's fate and hands on or schedules its copies.
func (fe *FaultEndpoint) inject(dir Direction, buf []byte, v Verdict) error {
	fe.mu.Lock()
	f := fe.inj.decide(dir, buf, v)
	note := f.notes()
	if f.lost {
		fe.mu.Unlock()
		fe.record(f.wire, note|NoteLost)
		return nil
	}
	now := fe.clk.Now()
	p := &fe.pipes[dir]
	at := max(p.last, now+f.stall)
	p.last = at

	if f.n == 1 && f.copies[0].hold == 0 && at <= now && len(p.queue) == 0 {
		fe.mu.Unlock()
		p.serial.Lock()
		defer p.serial.Unlock()
		return fe.hand(dir, f.copies[0].frame, note)
	}

	queuedAny := false
	for i, c := range f.copies[:f.n] {
		n := note
		if i == 1 {
			n |= NoteDuplicate
		}
		if c.hold > 0 {
			n |= NoteHeld
			fe.clk.AfterFunc(at+c.hold-now, func() {
				p.serial.Lock()
				defer p.serial.Unlock()
				_ = fe.hand(dir, c.frame, n)
			})
			continue
		}
		p.queue = append(p.queue, queued{at: at, frame: c.frame, note: n})
		queuedAny = true
	}
	fe.mu.Unlock()

	if queuedAny {
		if at <= now {
			fe.drain(dir)
		} else {
			fe.clk.AfterFunc(at-now, func() { fe.drain(dir) })
		}
	}
	return nil
}

// drain hands on, in order, every queued copy of dir that is due.
func (fe *FaultEndpoint) drain(dir Direction) {
	p := &fe.pipes[dir]
	p.serial.Lock()
	defer p.serial.Unlock()
	for {
		fe.mu.Lock()
		if len(p.queue) == 0 || p.queue[0].at > fe.clk.Now() {
			fe.mu.Unlock()
			return
		}
		q := p.queue[0]
		p.queue[0] = queued{}
		p.queue = p.queue[1:]
		fe.mu.Unlock()
		_ = fe.hand(dir, q.frame, q.note)
	}
}

// hand passes one copy on, recording it with note first; the caller holds
// the direction's serial lock.
func (fe *FaultEndpoint) hand(dir Direction, frame []byte, note LinkNote) error {
	fe.record(frame, note)
	fe.mu.Lock()
	st := &fe.inj.stats[dir]
	if fe.closed {
		st.Discarded++
		fe.mu.Unlock()
		return ErrClosed
	}
	if dir == AtoB {
		fe.mu.Unlock()
		err := fe.ep.Send(frame)
		fe.mu.Lock()
		if err != nil {
			st.Discarded++
		} else {
			st.Delivered++
		}
		fe.mu.Unlock()
		return err
	}
	r := fe.recv
	if r == nil {
		st.Discarded++
		fe.mu.Unlock()
		return nil
	}
	st.Delivered++
	fe.mu.Unlock()
	r(frame)
	return nil
}

// Capture makes fe record every frame that crosses it in rec, stamped by
// stamp, with a note (NoteRecorder) on each the faults touched, as a
// simulated link's capture does: a delivered copy when it is handed on,
// with the bytes the far side gets; a lost frame when it was sent. Call it
// before traffic flows.
func (fe *FaultEndpoint) Capture(rec FrameRecorder, stamp func() time.Time) {
	fe.mu.Lock()
	fe.rec, fe.stamp = rec, stamp
	fe.mu.Unlock()
}

// record writes frame to the capture, if any. Write errors are sticky in
// the recorder.
func (fe *FaultEndpoint) record(frame []byte, n LinkNote) {
	fe.mu.Lock()
	rec, stamp := fe.rec, fe.stamp
	fe.mu.Unlock()
	if rec == nil {
		return
	}
	if nr, ok := rec.(NoteRecorder); ok && n != 0 {
		_ = nr.WriteFrameNote(stamp(), frame, NotePrefix+n.String())
		return
	}
	_ = rec.WriteFrame(stamp(), frame)
}

// SetReceiver implements Endpoint.
func (fe *FaultEndpoint) SetReceiver(f func(frame []byte)) {
	fe.mu.Lock()
	fe.recv = f
	fe.mu.Unlock()
}

// Close implements Endpoint: it closes the wrapped endpoint, and copies
// still held back are discarded when their time comes.
func (fe *FaultEndpoint) Close() error {
	fe.mu.Lock()
	already := fe.closed
	fe.closed = true
	fe.mu.Unlock()
	if already {
		return nil
	}
	return fe.ep.Close()
}

// Stats returns the counters of one direction: AtoB for frames sent
// through the wrapper, BtoA for frames received through it.
func (fe *FaultEndpoint) Stats(dir Direction) Counters {
	fe.mu.Lock()
	defer fe.mu.Unlock()
	return fe.inj.stats[dir]
}
