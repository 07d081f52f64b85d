//go:build verbs

// ibv.Counters: port 1's hardware counters as the kernel exports them in
// sysfs (/sys/class/infiniband/DEV/ports/1/hw_counters), the numbers
// rdma statistic shows, under the same names.

package passthrough

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rnic/rnic/nic/ibv"
)

// sysfsRoot is where the kernel lists RDMA devices.
const sysfsRoot = "/sys/class/infiniband"

// Counters returns the port's counters sorted by name; none if the device
// exports none.
func (d *device) Counters() []ibv.Counter {
	return readCounters(filepath.Join(sysfsRoot, d.name, "ports", "1", "hw_counters"))
}

func readCounters(dir string) []ibv.Counter {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []ibv.Counter
	for _, e := range ents {
		if e.IsDir() || e.Name() == "lifespan" {
			continue // lifespan is the refresh period, not a counter
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		if v, ok := parseCounter(b); ok {
			out = append(out, ibv.Counter{Name: e.Name(), Value: v})
		}
	}
	slices.SortFunc(out, func(a, b ibv.Counter) int { return strings.Compare(a.Name, b.Name) })
	return out
}
