// FaultSpec: the text a user writes to put seeded faults on a real link
// (the tools' --faults, rnicd's device keys), parsed in one place so that
// every command takes the same words.
//
//	loss=0.01,reorder=25%,dup=0.01,corrupt=0.001,delay=0.01,delay-time=1ms..5ms,seed=7,dir=tx
//
// Probabilities are a fraction or a percentage. dir says which way the
// faults apply: tx (the default) is the frames the NIC sends, as Linux's
// netem does on an egress queue, so two NICs that each fault their own
// output fault every frame once; rx the frames it receives (the way to
// fault a peer that cannot fault its own output); both.

package transport

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// FaultDir says which way a FaultSpec's faults apply.
type FaultDir uint8

// The directions of a FaultSpec.
const (
	FaultTx   FaultDir = iota // frames the NIC sends (the default)
	FaultRx                   // frames the NIC receives
	FaultBoth                 // both
)

// String is the dir= word of d.
func (d FaultDir) String() string {
	switch d {
	case FaultRx:
		return "rx"
	case FaultBoth:
		return "both"
	}
	return "tx"
}

// FaultSpec is a parsed fault specification.
type FaultSpec struct {
	// Faults are the random faults, applied in Dir.
	Faults Faults
	Dir    FaultDir
	// Seed seeds the decisions; SeedGiven says the user chose it (else
	// Resolve draws one, which the program prints so that a failing run
	// replays).
	Seed      uint64
	SeedGiven bool
}

// FaultKeys are the keys of a fault specification, in the order String
// writes them.
var FaultKeys = []string{"loss", "dup", "corrupt", "reorder", "reorder-window", "delay", "delay-time", "seed", "dir"}

// IsFaultKey reports whether k is one of FaultKeys.
func IsFaultKey(k string) bool { return slices.Contains(FaultKeys, k) }

// DefaultDelayTime is the stall of a delayed frame when delay-time is not
// given: long enough to provoke an RC retransmission timeout's neighbour
// (a late ACK), short enough not to cost a test seconds.
const DefaultDelayTime = 2 * time.Millisecond

// ParseFaultSpec parses "key=value,key=value" (FaultKeys). An empty string
// is an error: a caller without faults has no spec.
func ParseFaultSpec(s string) (FaultSpec, error) {
	kv := map[string]string{}
	for field := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(field), "=")
		if !ok {
			return FaultSpec{}, fmt.Errorf("transport: fault spec %q: %q is not key=value", s, field)
		}
		if _, dup := kv[k]; dup {
			return FaultSpec{}, fmt.Errorf("transport: fault spec %q: %s given twice", s, k)
		}
		kv[k] = v
	}
	return FaultSpecFromKeys(kv)
}

// FaultSpecFromKeys builds a spec from keys already split (a device spec
// of rnicd carries them among its own). Every key must be a fault key.
func FaultSpecFromKeys(kv map[string]string) (FaultSpec, error) {
	var fs FaultSpec
	for _, k := range slices.Sorted(maps.Keys(kv)) {
		if err := fs.set(k, strings.TrimSpace(kv[k])); err != nil {
			return FaultSpec{}, fmt.Errorf("transport: fault %s=%q: %w", k, kv[k], err)
		}
	}
	if fs.Faults.Delay > 0 && fs.Faults.DelayMax == 0 {
		fs.Faults.DelayMin, fs.Faults.DelayMax = DefaultDelayTime, DefaultDelayTime
	}
	if !fs.Faults.enabled() {
		return FaultSpec{}, fmt.Errorf("transport: fault spec injects nothing: give loss, dup, corrupt, reorder or delay")
	}
	if err := fs.Faults.Validate(); err != nil {
		return FaultSpec{}, err
	}
	return fs, nil
}

// set applies one key.
func (fs *FaultSpec) set(k, v string) error {
	f := &fs.Faults
	var err error
	switch k {
	case "loss":
		f.Loss, err = parseProbability(v)
	case "dup":
		f.Dup, err = parseProbability(v)
	case "corrupt":
		f.Corrupt, err = parseProbability(v)
	case "reorder":
		f.Reorder, err = parseProbability(v)
	case "delay":
		f.Delay, err = parseProbability(v)
	case "reorder-window":
		f.ReorderWindow, err = parsePositiveDuration(v)
	case "delay-time":
		f.DelayMin, f.DelayMax, err = parseDurationRange(v)
	case "seed":
		fs.Seed, err = strconv.ParseUint(v, 0, 64)
		fs.SeedGiven = err == nil
	case "dir":
		fs.Dir, err = parseFaultDir(v)
	default:
		return fmt.Errorf("unknown key (keys: %s)", strings.Join(FaultKeys, ", "))
	}
	return err
}

// parseProbability takes "0.01" or "1%".
func parseProbability(v string) (float64, error) {
	scale := 1.0
	if s, ok := strings.CutSuffix(v, "%"); ok {
		v, scale = s, 100
	}
	p, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, fmt.Errorf("not a probability (0.01 or 1%%)")
	}
	p /= scale
	if !(p >= 0 && p <= 1) { // also refuses NaN
		return 0, fmt.Errorf("outside 0..1 (0%%..100%%)")
	}
	return p, nil
}

func parsePositiveDuration(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 || d > time.Minute {
		return 0, fmt.Errorf("not a duration in (0, 1m], e.g. 500us")
	}
	return d, nil
}

// parseDurationRange takes "2ms" (always that long) or "1ms..5ms".
func parseDurationRange(v string) (lo, hi time.Duration, err error) {
	a, b, isRange := strings.Cut(v, "..")
	if lo, err = parsePositiveDuration(a); err != nil {
		return 0, 0, err
	}
	if !isRange {
		return lo, lo, nil
	}
	if hi, err = parsePositiveDuration(b); err != nil {
		return 0, 0, err
	}
	if hi < lo {
		return 0, 0, fmt.Errorf("the range ends before it starts")
	}
	return lo, hi, nil
}

func parseFaultDir(v string) (FaultDir, error) {
	for _, d := range []FaultDir{FaultTx, FaultRx, FaultBoth} {
		if v == d.String() {
			return d, nil
		}
	}
	return 0, fmt.Errorf("not tx, rx or both")
}

// Resolve returns fs with a seed: the given one, else a random one.
func (fs FaultSpec) Resolve() FaultSpec {
	if !fs.SeedGiven {
		var b [8]byte
		_, _ = rand.Read(b[:]) // crypto/rand does not fail on Linux
		fs.Seed = binary.LittleEndian.Uint64(b[:]) >> 1
		fs.SeedGiven = true
	}
	return fs
}

// Config is the FaultConfig of a wrapper whose AtoB is the NIC's output
// (FaultEndpoint.Send) and BtoA its input.
func (fs FaultSpec) Config() FaultConfig {
	c := FaultConfig{Seed: fs.Seed}
	if fs.Dir != FaultRx {
		c.AtoB = fs.Faults
	}
	if fs.Dir != FaultTx {
		c.BtoA = fs.Faults
	}
	return c
}

// String writes fs in the syntax ParseFaultSpec reads, keys in FaultKeys
// order, zero ones left out: what a program prints so that the run can be
// replayed.
func (fs FaultSpec) String() string {
	f := fs.Faults
	var parts []string
	add := func(k, v string) { parts = append(parts, k+"="+v) }
	prob := func(k string, p float64) {
		if p > 0 {
			add(k, strconv.FormatFloat(p, 'g', -1, 64))
		}
	}
	prob("loss", f.Loss)
	prob("dup", f.Dup)
	prob("corrupt", f.Corrupt)
	prob("reorder", f.Reorder)
	if f.ReorderWindow > 0 {
		add("reorder-window", f.ReorderWindow.String())
	}
	prob("delay", f.Delay)
	if f.Delay > 0 {
		if f.DelayMin == f.DelayMax {
			add("delay-time", f.DelayMin.String())
		} else {
			add("delay-time", f.DelayMin.String()+".."+f.DelayMax.String())
		}
	}
	if fs.SeedGiven {
		add("seed", strconv.FormatUint(fs.Seed, 10))
	}
	if fs.Dir != FaultTx {
		add("dir", fs.Dir.String())
	}
	return strings.Join(parts, ",")
}
