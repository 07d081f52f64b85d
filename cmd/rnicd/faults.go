// Seeded faults on a NIC's wire: the fault keys of a device spec (the
// first device's --faults, or the keys among a --device spec's), and the
// counters and ready line that show them.

package main

import (
	"fmt"
	"maps"
	"strings"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/transport"
)

// faultsFlagHelp is the help of --faults.
const faultsFlagHelp = "seeded faults on the first NIC's wire (tap or udp): 'loss=0.01,reorder=25%,dup=0.01,corrupt=0.001,delay=0.01,delay-time=1ms..5ms,reorder-window=1ms,seed=7,dir=tx|rx|both' (a --device spec takes the same keys); the seed is printed so a run replays"

// mergeFaultsFlag adds the keys of the --faults value to the first
// device's keys.
func mergeFaultsFlag(kv map[string]string, v string) error {
	for field := range strings.SplitSeq(v, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(field), "=")
		switch {
		case !ok:
			return fmt.Errorf("--faults: %q is not key=value", field)
		case !transport.IsFaultKey(k):
			return fmt.Errorf("--faults: unknown key %q (keys: %s)", k, strings.Join(transport.FaultKeys, ", "))
		}
		if _, dup := kv[k]; dup {
			return fmt.Errorf("--faults: %s given twice", k)
		}
		kv[k] = val
	}
	return nil
}

// takeFaults removes the fault keys from kv and returns their spec, its
// seed drawn if not given (nil without fault keys).
func takeFaults(kv map[string]string) (*transport.FaultSpec, error) {
	fk := map[string]string{}
	for k, v := range maps.Clone(kv) {
		if transport.IsFaultKey(k) {
			fk[k] = v
			delete(kv, k)
		}
	}
	if len(fk) == 0 {
		return nil, nil
	}
	fs, err := transport.FaultSpecFromKeys(fk)
	if err != nil {
		return nil, fmt.Errorf("faults: %w", err)
	}
	fs = fs.Resolve()
	return &fs, nil
}

// withFaultCounters appends the counters of the NIC's injected faults to
// counters, if it has faults.
func withFaultCounters(counters, faults func() []ibv.Counter) func() []ibv.Counter {
	return func() []ibv.Counter { return append(counters(), faults()...) }
}

// faultsReady is what the ready line adds for a NIC with faults: the spec
// with its seed, to replay the run.
func faultsReady(s deviceSpec) string {
	if s.Faults == nil {
		return ""
	}
	return " faults " + s.Faults.String()
}
