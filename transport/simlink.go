// Simulated link: a point-to-point wire between two NICs in one process,
// whose every delivery is an event on a virtual clock.
//
// This is the transport of the simulated mode (nic/README.md, "Modes"): no
// goroutines, no wall time. A frame sent at virtual time t arrives at
//
//	max(previous arrival, t' + serialisation + latency + jitter + stall) + hold
//
// where t' is when the wire is free again (frames queue behind each other
// when Bandwidth is set), stall is an order-preserving fault delay and hold
// a reordering one. Without faults the link is FIFO, as a cable is: jitter
// varies the latency but never lets a frame overtake an earlier one.
//
// Every random choice comes from PCG streams seeded by SimConfig.Seed, so
// the same seed and the same sends give the same deliveries at the same
// virtual times, and the same pcap bytes.

package transport

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/rnic/rnic/transport/clock"
)

// DefaultLatency is the one-way latency of a simulated link whose
// SimConfig.Latency is zero: a short data-centre hop.
const DefaultLatency = time.Microsecond

// SimConfig configures a simulated link.
type SimConfig struct {
	// Seed seeds every random choice of the link, jitter and faults alike.
	Seed uint64
	// Latency is the one-way propagation delay; zero means DefaultLatency
	// (use 1ns for a practically instant wire).
	Latency time.Duration
	// Jitter adds a uniform random extra in [0, Jitter] to each frame's
	// latency, without reordering frames.
	Jitter time.Duration
	// Bandwidth in bits per second; zero means unlimited. When set, a frame
	// occupies the wire for len(frame)*8/Bandwidth (rounded up to a
	// nanosecond; preamble, FCS and inter-frame gap are not modelled) and
	// frames queue behind each other.
	Bandwidth uint64
	// Faults are injected on the wire (Faults.Seed is ignored: Seed rules).
	Faults FaultConfig
	// Pcap, if set, records what crosses the wire (a pcap.Writer); see
	// NewSimLink.
	Pcap FrameRecorder
	// Notes, if set (with Pcap), is told what the faults did to a frame
	// the capture cannot show by itself: it gets the record's 1-based
	// number in the capture and the notes, for every record that has any.
	Notes func(record int, n LinkNote)
}

// Validate reports the first invalid field of c.
func (c SimConfig) Validate() error {
	if c.Latency < 0 {
		return fmt.Errorf("transport: negative Latency %v", c.Latency)
	}
	if c.Jitter < 0 {
		return fmt.Errorf("transport: negative Jitter %v", c.Jitter)
	}
	return c.Faults.Validate()
}

const (
	streamJitterAtoB = 0x6a69747465724142 // "jitterAB"
	streamJitterBtoA = 0x6a69747465724241 // "jitterBA"
)

// simLink is the shared state of both directions.
type simLink struct {
	clk  *clock.Virtual
	cfg  SimConfig
	mu   sync.Mutex
	inj  *injector
	jit  [2]*rand.Rand
	free [2]time.Duration // when each direction's wire is idle again
	last [2]time.Duration // latest in-order arrival per direction
	ends [2]*SimEndpoint
	// bufs and arrivals are free lists: a frame in flight costs no
	// allocation once the link has carried as many at a time before.
	bufs     framePool
	arrivals []*arrival
}

// SimEndpoint is one side of a simulated link. It implements Endpoint.
type SimEndpoint struct {
	link   *simLink
	dir    Direction // the direction this side sends in
	recv   func([]byte)
	closed bool
}

// NewSimLink returns the two ends of a simulated link driven by clk: frames
// sent on a arrive at b's receiver (direction AtoB) and the other way round,
// each arrival an event that clk.Run or clk.Step executes. Send never
// delivers synchronously.
//
// If cfg.Pcap is set, the capture shows what crossed the wire, each record
// stamped PcapEpoch + the virtual time it happened:
//   - a delivered frame is recorded when it arrives, with the bytes the
//     receiver gets (a corrupted frame shows its flipped bit, a replaced one
//     its new bytes), once per copy: a duplicated frame appears twice, and a
//     reordered one appears in the order it arrived;
//   - a lost frame is recorded once, when it was sent, as it was sent: it
//     was on the sender's wire and never reached the other end.
//
// NewSimLink panics if cfg is invalid (see SimConfig.Validate): a broken
// test set-up is a programming error, and a CLI that takes the values from
// a user calls Validate first.
func NewSimLink(clk *clock.Virtual, cfg SimConfig) (a, b *SimEndpoint) {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	if cfg.Latency == 0 {
		cfg.Latency = DefaultLatency
	}
	l := &simLink{clk: clk, cfg: cfg, inj: newInjector(cfg.Faults, cfg.Seed)}
	l.jit[AtoB] = rand.New(rand.NewPCG(cfg.Seed, streamJitterAtoB))
	l.jit[BtoA] = rand.New(rand.NewPCG(cfg.Seed, streamJitterBtoA))
	a = &SimEndpoint{link: l, dir: AtoB}
	b = &SimEndpoint{link: l, dir: BtoA}
	l.ends[AtoB], l.ends[BtoA] = a, b
	return a, b
}

// Send implements Endpoint. It schedules the arrival on the virtual clock
// and returns; the receiver runs later, inside the clock's event loop.
func (e *SimEndpoint) Send(frame []byte) error {
	if len(frame) == 0 {
		return ErrEmptyFrame
	}
	l := e.link
	l.mu.Lock()
	if e.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	buf := l.bufs.take(frame)
	index := l.inj.claim(e.dir)
	var v Verdict
	if l.inj.cfg.Script != nil {
		// The script runs unlocked so that it may look at Stats.
		l.mu.Unlock()
		v = l.inj.verdict(e.dir, index, buf)
		l.mu.Lock()
	}
	f := l.inj.decide(e.dir, buf, v)
	now := l.clk.Now()

	// The frame occupies the sender's wire whether or not it survives.
	start := max(now, l.free[e.dir])
	end := start + l.serialisation(len(f.wire))
	l.free[e.dir] = end

	note := f.notes()
	if f.lost {
		l.mu.Unlock()
		l.record(now, f.wire, note|NoteLost)
		l.mu.Lock()
		l.bufs.put(buf)
		l.mu.Unlock()
		return nil
	}
	if !sameBytes(buf, f.copies[0].frame) {
		l.bufs.put(buf) // replaced: the copies carry the script's bytes
	}

	var jitter time.Duration
	if l.cfg.Jitter > 0 {
		jitter = time.Duration(uniform(l.jit[e.dir].Uint64(), uint64(l.cfg.Jitter)+1))
	}
	arrive := max(l.last[e.dir], end+l.cfg.Latency+jitter+f.stall)
	l.last[e.dir] = arrive

	// Copies of one frame, and frames with the same arrival time, are
	// delivered in scheduling order: the virtual clock runs events due at
	// the same instant first-in first-out.
	var pending [2]*arrival
	for i, c := range f.copies[:f.n] {
		a := l.takeArrival()
		a.dir, a.frame, a.note = e.dir, c.frame, note
		if i == 1 {
			a.note |= NoteDuplicate
		}
		if c.hold > 0 {
			a.note |= NoteHeld
		}
		a.after = arrive + c.hold - now
		pending[i] = a
	}
	l.mu.Unlock()
	for _, a := range pending[:f.n] {
		a.schedule()
	}
	return nil
}

// serialisation is how long n bytes occupy the wire. Integer arithmetic
// keeps it identical on every platform.
func (l *simLink) serialisation(n int) time.Duration {
	bw := l.cfg.Bandwidth
	if bw == 0 {
		return 0
	}
	bitsNs := uint64(n) * 8 * uint64(time.Second)
	return time.Duration((bitsNs + bw - 1) / bw)
}

// record writes one capture record stamped at virtual time t. Write errors
// are sticky in the recorder (a pcap.Writer surfaces them from its Close).
func (l *simLink) record(t time.Duration, frame []byte, n LinkNote) {
	if l.cfg.Pcap != nil {
		if nr, ok := l.cfg.Pcap.(NoteRecorder); ok && n != 0 {
			_ = nr.WriteFrameNote(PcapEpoch.Add(t), frame, NotePrefix+n.String())
		} else {
			_ = l.cfg.Pcap.WriteFrame(PcapEpoch.Add(t), frame)
		}
		if n != 0 && l.cfg.Notes != nil {
			l.cfg.Notes(l.cfg.Pcap.Frames(), n)
		}
	}
}

// deliver runs on the clock's event loop when a copy arrives. The copy's
// buffer and its arrival go back to the link's free lists once the receiver
// returns: the receiver may not keep the frame (Endpoint's contract).
func (l *simLink) deliver(a *arrival) {
	l.record(l.clk.Now(), a.frame, a.note)
	to := l.ends[1-a.dir]
	l.mu.Lock()
	r := to.recv
	if r == nil || to.closed {
		l.inj.stats[a.dir].Discarded++
		l.release(a)
		l.mu.Unlock()
		return
	}
	l.inj.stats[a.dir].Delivered++
	l.mu.Unlock()
	r(a.frame)
	l.mu.Lock()
	l.release(a)
	l.mu.Unlock()
}

// SetReceiver implements Endpoint.
func (e *SimEndpoint) SetReceiver(f func(frame []byte)) {
	e.link.mu.Lock()
	e.recv = f
	e.link.mu.Unlock()
}

// Close implements Endpoint. Frames already on the wire still reach the
// peer; frames arriving here afterwards are discarded.
func (e *SimEndpoint) Close() error {
	e.link.mu.Lock()
	e.closed = true
	e.link.mu.Unlock()
	return nil
}

// Direction reports the direction this endpoint sends in.
func (e *SimEndpoint) Direction() Direction { return e.dir }

// Stats returns the counters of the frames this endpoint sent.
func (e *SimEndpoint) Stats() Counters {
	e.link.mu.Lock()
	defer e.link.mu.Unlock()
	return e.link.inj.stats[e.dir]
}
