package sim

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/rnic/rnic/transport/tsharktest"
)

// TestIWARPRun: the checked workload over iWARP on simulated TCP streams
// that split and coalesce bytes at random points.
func TestIWARPRun(t *testing.T) {
	ops := 2000
	if testing.Short() {
		ops = 500
	}
	r, err := Run(Config{IWARP: true, Ops: ops, QPs: 4, Seed: 1, MaxMsg: 9000})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Passed() || r.Bytes == 0 {
		t.Fatalf("%s\n%v", r.Line(), r.Failures)
	}
	t.Log(r.Line())
}

// TestIWARPDeterministic: the same seed gives the same line and counters.
func TestIWARPDeterministic(t *testing.T) {
	run := func(seed uint64) string {
		r, err := Run(Config{IWARP: true, Ops: 400, QPs: 3, Seed: seed, MaxMsg: 5000, Chop: 0.5})
		if err != nil {
			t.Fatal(err)
		}
		if !r.Passed() {
			t.Fatalf("seed %d: %s\n%v", seed, r.Line(), r.Failures)
		}
		return fmt.Sprint(r.Line(), r.CountersA, r.CountersB)
	}
	a1, a2, b := run(3), run(3), run(4)
	if a1 != a2 {
		t.Fatalf("same seed, different output:\n%s\n%s", a1, a2)
	}
	if a1 == b {
		t.Fatal("different seeds, same output")
	}
}

func TestIWARPRejectsFaults(t *testing.T) {
	for _, c := range []Config{{Loss: 0.1}, {Reorder: 0.1}, {Dup: 0.1}, {Corrupt: 0.1}} {
		c.IWARP = true
		if _, err := Run(c); !errors.Is(err, ErrIWARPFaults) {
			t.Errorf("%+v: %v", c, err)
		}
	}
}

// TestIWARPPcap: the capture of an iWARP run dissects as MPA throughout.
func TestIWARPPcap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sim-iwarp.pcap")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(Config{IWARP: true, Ops: 200, QPs: 2, Seed: 2, MaxMsg: 4000, Pcap: f})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	if !r.Passed() {
		t.Fatalf("%s\n%v", r.Line(), r.Failures)
	}
	tsharktest.Check(t, path, tsharktest.Options{RequireMPA: true})
}
