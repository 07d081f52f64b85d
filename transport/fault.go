// Fault injection: deciding, frame by frame, whether a frame is lost,
// duplicated, corrupted, held back or delayed.
//
// The decisions live here, apart from any carrier, so that the simulated
// link (simlink.go) and the WithFaults decorator (faulty.go) behave the same
// way for the same configuration. Two modes exist:
//   - random faults, drawn from a seeded PCG so that a failing run replays
//     exactly from its seed (nic/README.md, principle 1);
//   - a script, for conformance scenarios that need "drop exactly the third
//     frame" rather than "drop about 1%".
//
// The injector never parses frames: corruption flips a bit anywhere, and it
// is up to the receiver to notice (ICRC, header checks).

package transport

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"time"
)

// DefaultReorderWindow is how far a reordered frame is held back at most
// when Faults.ReorderWindow is zero: several frame times at 1-100 Gb/s, so
// the frames that follow it closely overtake it.
const DefaultReorderWindow = 10 * time.Microsecond

// Faults are the random faults of one direction. The zero value injects
// nothing. Probabilities are per frame, in [0, 1].
type Faults struct {
	// Loss drops the frame.
	Loss float64
	// Dup delivers the frame twice, the copy right after the original.
	Dup float64
	// Corrupt flips one random bit of one random byte, anywhere in the
	// frame; both copies of a duplicated frame carry the same flip.
	Corrupt float64
	// Reorder holds the frame back by a uniform random time in
	// (0, ReorderWindow] without holding back the frames behind it, so later
	// frames overtake it. A frame counts as reordered even if nothing was
	// sent soon enough to overtake it.
	Reorder float64
	// ReorderWindow bounds the hold-back of Reorder; zero means
	// DefaultReorderWindow.
	ReorderWindow time.Duration
	// Delay stalls the direction: the frame gets an extra delay uniform in
	// [DelayMin, DelayMax], and frames sent after it queue behind it (order
	// is preserved, unlike Reorder). It models a latency spike, the way to
	// provoke timeouts without reordering.
	Delay              float64
	DelayMin, DelayMax time.Duration
}

// enabled reports whether f can inject anything; a direction without faults
// draws no random numbers at all.
func (f Faults) enabled() bool {
	return f.Loss > 0 || f.Dup > 0 || f.Corrupt > 0 || f.Reorder > 0 || f.Delay > 0
}

// Validate reports the first out-of-range field of f.
func (f Faults) Validate() error {
	for _, p := range []struct {
		name string
		v    float64
	}{{"Loss", f.Loss}, {"Dup", f.Dup}, {"Corrupt", f.Corrupt}, {"Reorder", f.Reorder}, {"Delay", f.Delay}} {
		if math.IsNaN(p.v) || p.v < 0 || p.v > 1 {
			return fmt.Errorf("transport: fault probability %s = %v is outside [0, 1]", p.name, p.v)
		}
	}
	if f.ReorderWindow < 0 {
		return fmt.Errorf("transport: negative ReorderWindow %v", f.ReorderWindow)
	}
	if f.DelayMin < 0 || f.DelayMax < f.DelayMin {
		return fmt.Errorf("transport: delay range [%v, %v] is invalid", f.DelayMin, f.DelayMax)
	}
	if f.Delay > 0 && f.DelayMax == 0 {
		return fmt.Errorf("transport: Delay = %v with a zero DelayMax delays nothing", f.Delay)
	}
	return nil
}

// Script decides the fate of one frame in a scripted scenario. index counts
// the frames sent in dir before this one (the first frame is 0). frame is the
// carrier's private copy: the script may read it, or modify it and return
// Replace(frame), but must not keep it. A script runs inside Send, without
// the carrier's lock held, and must not call Send itself.
type Script func(dir Direction, index int, frame []byte) Verdict

// FaultConfig configures fault injection for both directions of a link.
type FaultConfig struct {
	// Seed seeds the random faults of WithFaults. A simulated link ignores
	// it and draws from SimConfig.Seed, so that one number replays a run.
	Seed uint64
	// AtoB and BtoA are the random faults of each direction; Symmetric
	// fills both.
	AtoB, BtoA Faults
	// Script, if set, is consulted for every frame before the random
	// faults. When it returns anything but Pass, its verdict is the whole
	// story for that frame and no random fault applies; the random draws
	// are consumed anyway, so the random fate of every other frame does not
	// depend on what the script did.
	Script Script
}

// Symmetric returns a FaultConfig with the same random faults both ways.
func Symmetric(f Faults) FaultConfig { return FaultConfig{AtoB: f, BtoA: f} }

// Validate reports the first invalid field of c.
func (c FaultConfig) Validate() error {
	if err := c.AtoB.Validate(); err != nil {
		return fmt.Errorf("%v (AtoB)", err)
	}
	if err := c.BtoA.Validate(); err != nil {
		return fmt.Errorf("%v (BtoA)", err)
	}
	return nil
}

// of returns the random faults of dir.
func (c *FaultConfig) of(dir Direction) *Faults {
	if dir == AtoB {
		return &c.AtoB
	}
	return &c.BtoA
}

type verdictKind uint8

const (
	verdictPass verdictKind = iota
	verdictDrop
	verdictDuplicate
	verdictDelay
	verdictReplace
)

// Verdict is what a Script decides for one frame. Build one with Pass,
// Drop, Duplicate, Delay or Replace; the zero Verdict is Pass.
type Verdict struct {
	kind  verdictKind
	delay time.Duration
	frame []byte
}

// Pass lets the frame through untouched (random faults may still apply).
func Pass() Verdict { return Verdict{} }

// Drop loses the frame.
func Drop() Verdict { return Verdict{kind: verdictDrop} }

// Duplicate delivers the frame twice, the copy right after the original.
func Duplicate() Verdict { return Verdict{kind: verdictDuplicate} }

// Delay holds this frame back by d; frames sent after it are not held, so
// they overtake it when they arrive within d. A non-positive d is Pass.
func Delay(d time.Duration) Verdict {
	if d <= 0 {
		return Pass()
	}
	return Verdict{kind: verdictDelay, delay: d}
}

// Replace delivers frame (copied) instead of the original. An empty
// replacement is counted as both replaced and dropped, since no wire
// carries an empty frame.
func Replace(frame []byte) Verdict {
	return Verdict{kind: verdictReplace, frame: slices.Clone(frame)}
}

// String describes v for test failures and traces.
func (v Verdict) String() string {
	switch v.kind {
	case verdictDrop:
		return "drop"
	case verdictDuplicate:
		return "duplicate"
	case verdictDelay:
		return "delay " + v.delay.String()
	case verdictReplace:
		return fmt.Sprintf("replace (%d bytes)", len(v.frame))
	}
	return "pass"
}

// copyOut is one copy of a frame to deliver: its bytes and how long it is
// held back beyond its in-order arrival time.
type copyOut struct {
	frame []byte
	hold  time.Duration
}

// fate is the injector's decision for one frame. The carrier turns it into
// arrival times: stall is order-preserving (frames behind it wait too), hold
// applies to the copy alone (frames behind it may overtake).
type fate struct {
	lost      bool   // the frame never arrives
	corrupted bool   // a random bit was flipped
	wire      []byte // what went onto the wire: the bytes a capture shows for a lost frame
	stall     time.Duration
	n         int // copies to deliver: 0 when lost, else 1 or 2
	copies    [2]copyOut
}

// injector holds the per-direction fault state. It is not synchronised: the
// carrier serialises calls, except to the script, which runs unlocked.
type injector struct {
	cfg   FaultConfig
	rng   [2]*rand.Rand
	next  [2]int
	stats [2]Counters
}

// PCG stream selectors, so that each direction (and, in the sim link, the
// jitter) draws from its own sequence: the faults of A->B do not change when
// B->A traffic changes.
const (
	streamFaultsAtoB = 0x6661756c74734142 // "faultsAB"
	streamFaultsBtoA = 0x6661756c74734241 // "faultsBA"
)

func newInjector(cfg FaultConfig, seed uint64) *injector {
	in := &injector{cfg: cfg}
	in.rng[AtoB] = rand.New(rand.NewPCG(seed, streamFaultsAtoB))
	in.rng[BtoA] = rand.New(rand.NewPCG(seed, streamFaultsBtoA))
	return in
}

// claim numbers the next frame of dir and counts it as sent.
func (in *injector) claim(dir Direction) int {
	i := in.next[dir]
	in.next[dir]++
	in.stats[dir].Sent++
	return i
}

// verdict runs the script, if any. It touches no injector state, so the
// carrier calls it without holding its lock.
func (in *injector) verdict(dir Direction, index int, frame []byte) Verdict {
	if in.cfg.Script == nil {
		return Pass()
	}
	return in.cfg.Script(dir, index, frame)
}

// uniform maps a 64-bit random word onto [0, n) with one draw (the high
// word of the product), so the number of draws per frame never varies.
func uniform(x, n uint64) uint64 {
	hi, _ := bits.Mul64(x, n)
	return hi
}

// draws are the random numbers of one frame: a uniform [0, 1) each for
// loss, duplication, corruption, reordering and delay, and a word each to
// pick the flipped bit, the reorder hold and the stall.
type draws struct {
	loss, dup, corrupt, reorder, delay float64
	bit, hold, stall                   uint64
}

// draw draws a fixed set of numbers per frame whenever random faults are
// on, even when the script decides, so that the random fate of frame i
// depends only on the seed, the direction and i.
func (in *injector) draw(dir Direction) draws {
	r := in.rng[dir]
	var d draws
	d.loss, d.dup, d.corrupt, d.reorder, d.delay = r.Float64(), r.Float64(), r.Float64(), r.Float64(), r.Float64()
	d.bit, d.hold, d.stall = r.Uint64(), r.Uint64(), r.Uint64()
	return d
}

// decide settles the fate of frame, which the injector now owns, given the
// script's verdict v.
func (in *injector) decide(dir Direction, frame []byte, v Verdict) fate {
	st := &in.stats[dir]
	f := in.cfg.of(dir)
	random := f.enabled()
	var d draws
	if random {
		d = in.draw(dir)
	}
	out := fate{wire: frame}
	if v.kind != verdictPass {
		return out.scripted(st, frame, v)
	}
	if !random {
		return out.one(frame, 0)
	}
	return out.random(st, f, d, frame)
}

// scripted is the fate of frame under the script's verdict v.
func (out fate) scripted(st *Counters, frame []byte, v Verdict) fate {
	switch v.kind {
	case verdictDrop:
		return out.lose(st)
	case verdictDuplicate:
		return out.two(st, frame, 0)
	case verdictDelay:
		st.Delayed++
		return out.one(frame, v.delay)
	case verdictReplace:
		st.Replaced++
		if len(v.frame) == 0 {
			return out.lose(st)
		}
		// The link changed the frame's bytes: a capture's reader is told
		// so as for a random bit flip (NoteCorrupted).
		out.corrupted = true
		return out.one(v.frame, 0)
	}
	return out.one(frame, 0)
}

// random is the fate of frame under f's random faults, drawn as d.
func (out fate) random(st *Counters, f *Faults, d draws, frame []byte) fate {
	if d.loss < f.Loss {
		return out.lose(st)
	}
	if d.corrupt < f.Corrupt {
		bit := uniform(d.bit, uint64(len(frame))*8)
		frame[bit/8] ^= 1 << (bit % 8)
		st.Corrupted++
		out.corrupted = true
	}
	var hold time.Duration
	if d.reorder < f.Reorder {
		w := f.ReorderWindow
		if w == 0 {
			w = DefaultReorderWindow
		}
		hold = 1 + time.Duration(uniform(d.hold, uint64(w)))
		st.Reordered++
	}
	if d.delay < f.Delay {
		out.stall = f.DelayMin + time.Duration(uniform(d.stall, uint64(f.DelayMax-f.DelayMin)+1))
		st.Delayed++
	}
	if d.dup < f.Dup {
		return out.two(st, frame, hold)
	}
	return out.one(frame, hold)
}

// one delivers b once after hold.
func (out fate) one(b []byte, hold time.Duration) fate {
	out.wire = b
	out.n = 1
	out.copies[0] = copyOut{frame: b, hold: hold}
	return out
}

// two delivers b twice after hold (the second a copy).
func (out fate) two(st *Counters, b []byte, hold time.Duration) fate {
	out.wire = b
	out.n = 2
	out.copies[0] = copyOut{frame: b, hold: hold}
	out.copies[1] = copyOut{frame: slices.Clone(b), hold: hold}
	st.Duplicated++
	return out
}

// lose loses the frame.
func (out fate) lose(st *Counters) fate {
	out.lost = true
	st.Dropped++
	return out
}
