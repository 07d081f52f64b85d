package transport

import (
	"strings"
	"testing"
	"time"
)

// TestParseFaultSpec: every key, fractions and percentages, the default
// delay time and direction, and String writing back what parses to the
// same spec.
func TestParseFaultSpec(t *testing.T) {
	for _, c := range []struct {
		in   string
		want FaultSpec
		str  string
	}{
		{"loss=0.01", FaultSpec{Faults: Faults{Loss: 0.01}}, "loss=0.01"},
		{"loss=1%,reorder=25%,seed=7", FaultSpec{Faults: Faults{Loss: 0.01, Reorder: 0.25}, Seed: 7, SeedGiven: true},
			"loss=0.01,reorder=0.25,seed=7"},
		{" dup=0.01 , corrupt=0.001 ,dir=both", FaultSpec{Faults: Faults{Dup: 0.01, Corrupt: 0.001}, Dir: FaultBoth},
			"dup=0.01,corrupt=0.001,dir=both"},
		{"delay=0.5", FaultSpec{Faults: Faults{Delay: 0.5, DelayMin: DefaultDelayTime, DelayMax: DefaultDelayTime}},
			"delay=0.5,delay-time=2ms"},
		{"delay=1,delay-time=1ms..5ms,dir=rx,seed=0x10", FaultSpec{Faults: Faults{Delay: 1, DelayMin: time.Millisecond,
			DelayMax: 5 * time.Millisecond}, Dir: FaultRx, Seed: 16, SeedGiven: true}, "delay=1,delay-time=1ms..5ms,seed=16,dir=rx"},
		{"reorder=0.1,reorder-window=500us", FaultSpec{Faults: Faults{Reorder: 0.1, ReorderWindow: 500 * time.Microsecond}},
			"reorder=0.1,reorder-window=500µs"},
	} {
		got, err := ParseFaultSpec(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseFaultSpec(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
			continue
		}
		if s := got.String(); s != c.str {
			t.Errorf("%q: String() = %q, want %q", c.in, s, c.str)
		}
		again, err := ParseFaultSpec(got.String())
		if err != nil || again != got {
			t.Errorf("%q: String() %q parses to %+v, %v", c.in, got.String(), again, err)
		}
	}
}

// TestParseFaultSpecErrors: each error names what is wrong.
func TestParseFaultSpecErrors(t *testing.T) {
	for in, want := range map[string]string{
		"":                              "not key=value",
		"loss":                          "not key=value",
		"loss=0.1,loss=0.2":             "given twice",
		"lose=0.1":                      "unknown key",
		"loss=2":                        "outside 0..1",
		"loss=-1%":                      "outside 0..1",
		"loss=NaN":                      "outside 0..1",
		"loss=x":                        "not a probability",
		"seed=7":                        "injects nothing",
		"loss=0":                        "injects nothing",
		"loss=0.1,seed=-1":              "seed",
		"loss=0.1,dir=up":               "not tx, rx or both",
		"delay=0.1,delay-time=5ms..1ms": "ends before it starts",
		"delay=0.1,delay-time=0s":       "not a duration",
		"reorder=0.1,reorder-window=2m": "not a duration",
	} {
		_, err := ParseFaultSpec(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseFaultSpec(%q) = %v, want an error with %q", in, err, want)
		}
	}
}

// TestFaultSpecConfig: tx faults the frames sent through a wrapper (AtoB),
// rx those it receives, both both; Resolve keeps a given seed and draws
// one otherwise.
func TestFaultSpecConfig(t *testing.T) {
	f := Faults{Loss: 0.5}
	for dir, want := range map[FaultDir][2]bool{FaultTx: {true, false}, FaultRx: {false, true}, FaultBoth: {true, true}} {
		c := FaultSpec{Faults: f, Dir: dir, Seed: 3}.Config()
		if (c.AtoB == f) != want[0] || (c.BtoA == f) != want[1] || c.Seed != 3 {
			t.Errorf("%v: Config() = %+v", dir, c)
		}
	}
	if s := (FaultSpec{Faults: f, Seed: 9, SeedGiven: true}).Resolve(); s.Seed != 9 {
		t.Errorf("Resolve changed a given seed: %d", s.Seed)
	}
	a, b := FaultSpec{Faults: f}.Resolve(), FaultSpec{Faults: f}.Resolve()
	if !a.SeedGiven || a.Seed == b.Seed || !strings.Contains(a.String(), "seed=") {
		t.Errorf("Resolve without a seed: %+v and %+v", a, b)
	}
}

// FuzzParseFaultSpec: no input panics; whatever parses is valid and
// survives String and a second parse unchanged.
func FuzzParseFaultSpec(f *testing.F) {
	for _, s := range []string{"loss=0.01", "loss=1%,reorder=25%,dup=0.01,corrupt=0.001,seed=7",
		"delay=0.1,delay-time=1ms..5ms,dir=both", "reorder=0.5,reorder-window=1ms", "loss=,", "=", "seed=0x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fs, err := ParseFaultSpec(s)
		if err != nil {
			return
		}
		if err := fs.Faults.Validate(); err != nil {
			t.Fatalf("%q parsed to an invalid spec: %v", s, err)
		}
		again, err := ParseFaultSpec(fs.String())
		if err != nil || again != fs {
			t.Fatalf("%q: String %q parses to %+v, %v; want %+v", s, fs.String(), again, err, fs)
		}
	})
}
