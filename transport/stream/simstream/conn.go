// Simulated stream: an in-memory TCP connection whose every delivery is an
// event on a virtual clock (the simulated mode of nic/README.md, "Modes").
//
// Each direction is one ordered byte queue with three cursors:
//
//	delivered ≤ arrived ≤ cut ≤ written
//
// Write appends (written). The sender's pump cuts segments off the unsent
// tail (cut) and puts them on the wire: a segment of n bytes leaves when
// the wire is free, occupies it for n*8/Bandwidth, and arrives Latency
// later, never before an earlier segment (TCP is ordered). An arrival
// event moves arrived; a delivery event hands the arrived bytes to the
// receiver (delivered). Nothing is ever lost, duplicated or reordered:
// the stream is reliable, as TCP is, and its faults are the ones TCP lets
// through (a corrupted byte, a reset).
//
// Arbitrary split and coalescing, which the MPA parser must survive:
//   - writes made before the pump runs (the same event, or within
//     Config.Coalesce, or while the wire is busy when Bandwidth is set)
//     share segments, so a segment can span several writes;
//   - a segment is at most MSS bytes, and with probability Chop it is cut
//     shorter, at a uniformly random point;
//   - segments arriving at the same instant are delivered together, and
//     with probability Chop a delivery hands over only a random prefix of
//     what has arrived (the rest follows in further onData calls at the
//     same instant), as a short read does.
//
// Every random choice comes from PCG streams seeded by Config.Seed: the
// same seed and the same writes give the same chunks at the same virtual
// times.

package simstream

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/netip"
	"sync"
	"time"

	"github.com/rnic/rnic/transport"
	"github.com/rnic/rnic/transport/clock"
	"github.com/rnic/rnic/transport/stream"
)

// Defaults of a Config.
const (
	// DefaultMSS is the largest segment of a simulated connection whose
	// Config.MSS is zero: the TCP payload of a 1500-byte IPv4 frame.
	DefaultMSS = 1460
	// DefaultPort is the listening port of NewPair's B end when
	// Config.B is zero (perftest's port; tshark claims no dissector on
	// it).
	DefaultPort = 18515
)

// Default addresses of NewPair's ends.
var (
	DefaultA = netip.MustParseAddrPort("10.0.0.1:49152")
	DefaultB = netip.AddrPortFrom(netip.MustParseAddr("10.0.0.2"), DefaultPort)
)

// ResetPoint resets a simulated connection once Offset bytes of direction Dir
// have been put on the wire: the receiving end gets exactly those bytes, then
// onClose(stream.ErrReset), as if its stack had reset the connection, and its
// RST reaches the sender one latency later (onClose(stream.ErrReset) there
// too, after what it had received). Bytes written beyond Offset are dropped.
// Offset 0 resets the connection at the first write in Dir.
type ResetPoint struct {
	Dir    transport.Direction
	Offset int64
}

// Config configures a simulated connection. The zero value is a
// 1µs, unlimited-bandwidth connection with 1460-byte segments and no random
// splitting.
type Config struct {
	// Seed seeds every random choice.
	Seed uint64
	// Latency is the one-way delay; zero means transport.DefaultLatency.
	Latency time.Duration
	// Bandwidth in bits per second of payload, each direction; zero means
	// unlimited. When set, segments queue behind each other and writes made
	// meanwhile coalesce into the following segments.
	Bandwidth uint64
	// MSS is the largest segment; zero means DefaultMSS.
	MSS int
	// Chop in [0, 1] is the probability that a segment is cut short, and
	// that a delivery hands over only part of what arrived, each at a
	// uniformly random point. 0.5 exercises a byte-stream parser well.
	Chop float64
	// Coalesce delays the cutting of segments after a write into an empty
	// send queue, so that the writes made meanwhile share segments (a
	// corked socket). Zero still coalesces the writes of one event.
	Coalesce time.Duration
	// SendBuffer is each end's send buffer (see "Backpressure" in package
	// stream): bytes written and not yet delivered to the peer's receiver.
	// Zero means stream.DefaultSendBuffer.
	SendBuffer int
	// Tamper, if set, sees every segment as it goes on the wire: dir is the
	// segment's direction (AtoB from the A end, or from the dialer in a
	// Network), off the stream offset of its first byte (from 0), seg
	// its bytes, which Tamper may modify in place (the receiver gets the
	// modified bytes) but must not keep. It runs inside the clock's event
	// loop with the connection's lock held and must not call the
	// connection's methods. CorruptAt builds a common one.
	Tamper func(dir transport.Direction, off int64, seg []byte)
	// Reset, if set, resets the connection at a chosen byte offset.
	Reset *ResetPoint
	// A and B are the addresses of NewPair's ends (zero: DefaultA,
	// DefaultB); A is the active end. A Network ignores them.
	A, B netip.AddrPort
}

// Validate reports the first invalid field of c.
func (c Config) Validate() error {
	switch {
	case c.Latency < 0:
		return fmt.Errorf("simstream: negative Latency %v", c.Latency)
	case c.MSS < 0:
		return fmt.Errorf("simstream: negative MSS %d", c.MSS)
	case !(c.Chop >= 0 && c.Chop <= 1):
		return fmt.Errorf("simstream: Chop = %v is outside [0, 1]", c.Chop)
	case c.Coalesce < 0:
		return fmt.Errorf("simstream: negative Coalesce %v", c.Coalesce)
	case c.SendBuffer < 0:
		return fmt.Errorf("simstream: negative SendBuffer %d", c.SendBuffer)
	case c.Reset != nil && c.Reset.Offset < 0:
		return fmt.Errorf("simstream: negative Reset.Offset %d", c.Reset.Offset)
	case c.Reset != nil && c.Reset.Dir > transport.BtoA:
		return fmt.Errorf("simstream: invalid Reset.Dir %v", c.Reset.Dir)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.Latency == 0 {
		c.Latency = transport.DefaultLatency
	}
	if c.MSS == 0 {
		c.MSS = DefaultMSS
	}
	if c.SendBuffer <= 0 {
		c.SendBuffer = stream.DefaultSendBuffer
	}
	if !c.A.IsValid() {
		c.A = DefaultA
	}
	if !c.B.IsValid() {
		c.B = DefaultB
	}
	return c
}

// CorruptAt returns a Config.Tamper that XORs the byte at stream offset
// off of direction dir with mask (a non-zero mask: 0x01 flips one bit), to
// provoke an MPA CRC error.
func CorruptAt(dir transport.Direction, off int64, mask byte) func(transport.Direction, int64, []byte) {
	return func(d transport.Direction, start int64, seg []byte) {
		if d == dir && off >= start && off < start+int64(len(seg)) {
			seg[off-start] ^= mask
		}
	}
}

// PCG stream constants: one per direction and purpose, so that the random
// fate of one never shifts another's.
const (
	streamSegAtoB  = 0x73656741746f4221 // "segAtoB!"
	streamSegBtoA  = 0x7365674274614121 // "segBtoA!"
	streamReadAtoB = 0x7265644174614221 // "redAtaB!"
	streamReadBtoA = 0x7265644274614121 // "redBtaA!"
)

type segKind uint8

const (
	segData segKind = iota
	segFIN
	segRST     // a RST: the receiver's connection is reset
	segRSTEcho // a scripted reset: the receiver resets and sends a RST back
)

// flightSeg is a segment on the wire.
type flightSeg struct {
	at   time.Duration
	n    int
	kind segKind
}

// simDir is one direction of a connection. Offsets are stream offsets;
// buf holds the bytes [base, written).
type simDir struct {
	buf                 []byte
	base                int64
	delivered, arrived  int64
	cut, written        int64
	flight              []flightSeg
	free, last          time.Duration // wire idle again; latest arrival
	finQueued, finCut   bool
	finArrived, rstIn   bool // what the receiver has seen
	dead                bool // sending stopped by a reset: unsent bytes are dropped
	resetOff            int64
	segRng, readRng     *rand.Rand
	pumpT, arriveT      clock.Timer
	pumpArmed, arriving bool
}

// simPair is the shared state of a connection's two ends.
type simPair struct {
	clk  *clock.Virtual
	cfg  Config
	mu   sync.Mutex
	dirs [2]simDir
	ends [2]*Conn
}

// Conn is one end of a simulated connection. It implements stream.Conn; its
// callbacks run inside the virtual clock's event loop. Its methods are safe
// for concurrent use, but a run is deterministic only when everything
// happens on the goroutine running the clock.
type Conn struct {
	p             *simPair
	dir           transport.Direction // the direction this end sends in
	local, remote netip.AddrPort
	active        bool

	onData       func([]byte)
	onClose      func(error)
	onWritable   func()
	receiverSet  bool
	closed       bool // Close was called
	aborted      bool // Abort was called
	werr         error
	blocked      bool
	closeDone    bool // onClose has been called
	deliverT     clock.Timer
	delivering   bool
	writableT    clock.Timer
	writableWant bool
}

var _ stream.Conn = (*Conn)(nil)

// NewPair returns the two ends of a connected simulated TCP connection
// driven by clk: a (cfg.A, the active end) and b (cfg.B). No handshake
// happens; for connection set-up on the clock use a Network. It panics
// if cfg is invalid (see Config.Validate).
func NewPair(clk *clock.Virtual, cfg Config) (a, b *Conn) {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	cfg = cfg.withDefaults()
	return newPair(clk, cfg, cfg.A, cfg.B)
}

func newPair(clk *clock.Virtual, cfg Config, aAddr, bAddr netip.AddrPort) (a, b *Conn) {
	p := &simPair{clk: clk, cfg: cfg}
	p.dirs[transport.AtoB].segRng = rand.New(rand.NewPCG(cfg.Seed, streamSegAtoB))
	p.dirs[transport.BtoA].segRng = rand.New(rand.NewPCG(cfg.Seed, streamSegBtoA))
	p.dirs[transport.AtoB].readRng = rand.New(rand.NewPCG(cfg.Seed, streamReadAtoB))
	p.dirs[transport.BtoA].readRng = rand.New(rand.NewPCG(cfg.Seed, streamReadBtoA))
	for i := range p.dirs {
		p.dirs[i].resetOff = -1
	}
	if r := cfg.Reset; r != nil {
		p.dirs[r.Dir].resetOff = r.Offset
	}
	a = &Conn{p: p, dir: transport.AtoB, local: aAddr, remote: bAddr, active: true}
	b = &Conn{p: p, dir: transport.BtoA, local: bAddr, remote: aAddr}
	p.ends[transport.AtoB], p.ends[transport.BtoA] = a, b
	return a, b
}

// LocalAddr implements stream.Conn.
func (e *Conn) LocalAddr() netip.AddrPort { return e.local }

// RemoteAddr implements stream.Conn.
func (e *Conn) RemoteAddr() netip.AddrPort { return e.remote }

// Active implements stream.Conn.
func (e *Conn) Active() bool { return e.active }

// Direction reports the direction this end sends in.
func (e *Conn) Direction() transport.Direction { return e.dir }

func (e *Conn) out() *simDir { return &e.p.dirs[e.dir] }
func (e *Conn) in() *simDir  { return &e.p.dirs[1-e.dir] }

// SetReceiver implements stream.Conn. Deliveries start with the first call, in
// the clock's event loop, never inside SetReceiver.
func (e *Conn) SetReceiver(onData func(p []byte), onClose func(err error)) {
	p := e.p
	p.mu.Lock()
	defer p.mu.Unlock()
	e.onData, e.onClose = onData, onClose
	e.receiverSet = true
	e.armDeliverLocked()
}

// SetWritable implements stream.Conn.
func (e *Conn) SetWritable(f func()) {
	e.p.mu.Lock()
	e.onWritable = f
	e.p.mu.Unlock()
}

// Buffered implements stream.Conn: bytes written and not yet delivered to the
// peer's receiver.
func (e *Conn) Buffered() int {
	e.p.mu.Lock()
	defer e.p.mu.Unlock()
	d := e.out()
	return int(d.written - d.delivered)
}

// Write implements stream.Conn.
func (e *Conn) Write(b []byte) (int, error) {
	p := e.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if e.werr != nil {
		return 0, e.werr
	}
	if len(b) == 0 {
		return 0, nil
	}
	d := e.out()
	if stream.MustRefuse(int(d.written-d.delivered), len(b), p.cfg.SendBuffer) {
		e.blocked = true
		return 0, stream.ErrWouldBlock
	}
	if d.dead {
		return len(b), nil // a reset is on its way; the bytes go nowhere
	}
	d.buf = append(d.buf, b...)
	d.written += int64(len(b))
	p.armPumpLocked(e.dir, p.cfg.Coalesce)
	return len(b), nil
}

// Close implements stream.Conn.
func (e *Conn) Close() error {
	p := e.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if e.closed || e.aborted {
		return nil
	}
	e.closed = true
	if e.werr == nil {
		e.werr = stream.ErrClosed
	}
	if d := e.out(); !d.dead {
		d.finQueued = true
		p.armPumpLocked(e.dir, 0)
	}
	return nil
}

// Abort implements stream.Conn. Segments already on the wire still arrive; the
// RST follows them.
func (e *Conn) Abort() error {
	p := e.p
	p.mu.Lock()
	defer p.mu.Unlock()
	out, in := e.out(), e.in()
	if e.aborted || in.rstIn || (e.closeDone && out.finCut) {
		return nil
	}
	e.aborted = true
	e.werr = stream.ErrClosed
	p.killLocked(e.dir)
	p.sendLocked(e.dir, segRST)
	// What arrived and what will arrive is discarded.
	in.delivered = in.arrived
	p.consumedLocked(1 - e.dir)
	e.armDeliverLocked()
	return nil
}

// killLocked stops sending in dir: unsent bytes are dropped.
func (p *simPair) killLocked(dir transport.Direction) {
	d := &p.dirs[dir]
	if d.dead {
		return
	}
	d.dead = true
	d.buf = d.buf[:d.cut-d.base]
	d.written = d.cut
	if d.pumpArmed {
		d.pumpT.Stop()
		d.pumpArmed = false
	}
}

// sendLocked puts a FIN or RST on the wire of dir, behind every segment
// already there.
func (p *simPair) sendLocked(dir transport.Direction, kind segKind) {
	d := &p.dirs[dir]
	now := p.clk.Now()
	at := max(d.last, max(now, d.free)+p.cfg.Latency)
	d.last = at
	p.enqueueLocked(dir, flightSeg{at: at, kind: kind})
}

func (p *simPair) enqueueLocked(dir transport.Direction, s flightSeg) {
	d := &p.dirs[dir]
	d.flight = append(d.flight, s)
	if !d.arriving {
		d.arriving = true
		delay := s.at - p.clk.Now()
		if d.arriveT == nil {
			d.arriveT = p.clk.AfterFunc(delay, func() { p.arrive(dir) })
		} else {
			d.arriveT.Reset(delay)
		}
	}
}

func (p *simPair) armPumpLocked(dir transport.Direction, delay time.Duration) {
	d := &p.dirs[dir]
	if d.pumpArmed {
		return
	}
	if now := p.clk.Now(); p.cfg.Bandwidth > 0 && d.free > now {
		delay = max(delay, d.free-now)
	}
	d.pumpArmed = true
	if d.pumpT == nil {
		d.pumpT = p.clk.AfterFunc(delay, func() { p.pump(dir) })
	} else {
		d.pumpT.Reset(delay)
	}
}

// serialisation is how long n bytes occupy the wire.
func (p *simPair) serialisation(n int) time.Duration {
	bw := p.cfg.Bandwidth
	if bw == 0 {
		return 0
	}
	return time.Duration((uint64(n)*8*uint64(time.Second) + bw - 1) / bw)
}

// pump cuts segments off the unsent bytes of dir and puts them on the wire.
func (p *simPair) pump(dir transport.Direction) {
	p.mu.Lock()
	defer p.mu.Unlock()
	d := &p.dirs[dir]
	d.pumpArmed = false
	if d.dead {
		return
	}
	now := p.clk.Now()
	for d.cut < d.written {
		if d.resetOff >= 0 && d.cut >= d.resetOff {
			p.scriptedResetLocked(dir)
			return
		}
		if p.cfg.Bandwidth > 0 && d.free > now {
			p.armPumpLocked(dir, 0)
			return
		}
		n := int(min(d.written-d.cut, int64(p.cfg.MSS)))
		if d.resetOff >= 0 && d.cut+int64(n) > d.resetOff {
			n = int(d.resetOff - d.cut)
		}
		if p.cfg.Chop > 0 && n > 1 && d.segRng.Float64() < p.cfg.Chop {
			n = 1 + d.segRng.IntN(n-1)
		}
		if p.cfg.Tamper != nil {
			i := d.cut - d.base
			p.cfg.Tamper(dir, d.cut, d.buf[i:i+int64(n)])
		}
		end := max(now, d.free) + p.serialisation(n)
		d.free = end
		at := max(d.last, end+p.cfg.Latency)
		d.last = at
		d.cut += int64(n)
		p.enqueueLocked(dir, flightSeg{at: at, n: n})
		if d.cut == d.resetOff {
			p.scriptedResetLocked(dir)
			return
		}
	}
	if d.finQueued && !d.finCut {
		d.finCut = true
		p.sendLocked(dir, segFIN)
	}
}

// scriptedResetLocked carries out Config.Reset: the sender of dir stops,
// and a RST that the receiver echoes follows the bytes on the wire.
func (p *simPair) scriptedResetLocked(dir transport.Direction) {
	p.dirs[dir].resetOff = -1
	p.killLocked(dir)
	p.sendLocked(dir, segRSTEcho)
}

// arrive runs when the head of dir's wire arrives.
func (p *simPair) arrive(dir transport.Direction) {
	p.mu.Lock()
	defer p.mu.Unlock()
	d := &p.dirs[dir]
	to := p.ends[1-dir]
	d.arriving = false
	now := p.clk.Now()
	i := 0
	for ; i < len(d.flight) && d.flight[i].at <= now; i++ {
		s := d.flight[i]
		switch s.kind {
		case segData:
			d.arrived += int64(s.n)
		case segFIN:
			d.finArrived = true
		case segRST, segRSTEcho:
			if to.aborted || d.rstIn {
				continue
			}
			d.rstIn = true
			if to.werr == nil {
				to.werr = stream.ErrReset // after Close, Write keeps saying stream.ErrClosed
			}
			p.killLocked(to.dir)
			if s.kind == segRSTEcho {
				p.sendLocked(to.dir, segRST)
			}
		}
	}
	d.flight = append(d.flight[:0], d.flight[i:]...)
	if len(d.flight) > 0 {
		d.arriving = true
		d.arriveT.Reset(d.flight[0].at - now)
	}
	if to.aborted {
		d.delivered = d.arrived
		p.consumedLocked(dir)
		return
	}
	to.armDeliverLocked()
}

func (e *Conn) armDeliverLocked() {
	in := e.in()
	pending := e.aborted || in.arrived > in.delivered || in.finArrived || in.rstIn
	if e.delivering || e.closeDone || !e.receiverSet || !pending {
		return
	}
	e.delivering = true
	if e.deliverT == nil {
		e.deliverT = e.p.clk.AfterFunc(0, e.deliver)
	} else {
		e.deliverT.Reset(0)
	}
}

// deliver hands what has arrived to the receiver, then the end of the
// stream, if it came.
func (e *Conn) deliver() {
	p := e.p
	in := e.in()
	p.mu.Lock()
	defer p.mu.Unlock()
	e.delivering = false
	for !e.closeDone && e.receiverSet {
		var reason error
		switch {
		case e.aborted:
			reason = stream.ErrAborted
		case in.arrived > in.delivered:
			n := int(in.arrived - in.delivered)
			if p.cfg.Chop > 0 && n > 1 && in.readRng.Float64() < p.cfg.Chop {
				n = 1 + in.readRng.IntN(n-1)
			}
			i := in.delivered - in.base
			chunk := in.buf[i : i+int64(n) : i+int64(n)]
			in.delivered += int64(n)
			if f := e.onData; f != nil {
				p.mu.Unlock()
				f(chunk)
				p.mu.Lock()
			}
			p.consumedLocked(1 - e.dir)
			continue
		case in.rstIn:
			reason = stream.ErrReset
		case in.finArrived:
			reason = io.EOF
		default:
			return
		}
		e.closeDone = true
		if f := e.onClose; f != nil {
			p.mu.Unlock()
			f(reason)
			p.mu.Lock()
		}
	}
}

// consumedLocked runs after bytes of dir were delivered (or discarded): it
// reclaims buffer space and tells a blocked sender it may write again.
func (p *simPair) consumedLocked(dir transport.Direction) {
	d := &p.dirs[dir]
	if gone := d.delivered - d.base; gone >= 4096 && gone >= int64(len(d.buf))/2 {
		n := copy(d.buf, d.buf[gone:])
		d.buf = d.buf[:n]
		d.base = d.delivered
	}
	s := p.ends[dir]
	if s.blocked && d.written-d.delivered <= int64(p.cfg.SendBuffer/2) {
		s.blocked = false
		if !s.writableWant {
			s.writableWant = true
			if s.writableT == nil {
				s.writableT = p.clk.AfterFunc(0, s.writable)
			} else {
				s.writableT.Reset(0)
			}
		}
	}
}

func (e *Conn) writable() {
	e.p.mu.Lock()
	e.writableWant = false
	f := e.onWritable
	live := e.werr == nil
	e.p.mu.Unlock()
	if f != nil && live {
		f()
	}
}
