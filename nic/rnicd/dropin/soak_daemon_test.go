package dropin

// The soak's daemons: two rnicd --udp, one NIC each, so that the soak's
// traffic crosses between two daemons on real kernel UDP sockets, with
// seeded faults on each NIC's wire; and what each holds (descriptors,
// mappings, memory, objects), read before and after the soak.

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// startSoloDaemon starts rnicd --udp on a fresh loopback address with
// one NIC named name, as the programs' user, on a socket of its own;
// flags are added to its command line (the faults).
func startSoloDaemon(cleanup func(func()), name string, flags ...string) (*daemon, error) {
	var last error
	for range 5 { // an address in use by a parallel run: try another
		d, err := trySoloDaemon(cleanup, name, flags...)
		if err == nil {
			return d, nil
		}
		last = err
	}
	return nil, last
}

func trySoloDaemon(cleanup func(func()), name string, flags ...string) (*daemon, error) {
	dir, err := userDir(build.dir, fmt.Sprintf("soak-%s-%d", name, rand.Uint32()))
	if err != nil {
		return nil, err
	}
	d := &daemon{socket: filepath.Join(dir, "rnicd.sock"), addrs: [2]string{loopbackAddr()}}
	argv := append([]string{build.rnicd, "--udp", d.addrs[0], "--name", name, "--socket", d.socket}, flags...)
	d.p = &proc{name: "rnicd " + name, cmd: userCommand(argv), out: new(syncBuffer), done: make(chan struct{})}
	stdout, w := io.Pipe()
	d.p.cmd.Env = withoutEnv(os.Environ(), "RNIC_SOCKET")
	return d, d.launch(cleanup, stdout, w, "rnicd: serving "+name+" on "+d.socket)
}

// holding is what a daemon process holds from the kernel. memfds are
// its mappings of clients' memory and rings (each a window of a memfd);
// maps counts all its mappings, threads its OS threads.
type holding struct {
	fds, maps, memfds, threads int
	rssKiB                     int
}

func (h holding) String() string {
	return fmt.Sprintf("%d descriptors, %d mappings (%d of memfds), %d threads, RSS %d KiB",
		h.fds, h.maps, h.memfds, h.threads, h.rssKiB)
}

// holdingOf reads /proc for the daemon's process.
func holdingOf(d *daemon) (holding, error) {
	pid := d.p.cmd.Process.Pid
	var h holding
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return h, err
	}
	h.fds = len(fds)
	maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return h, err
	}
	h.maps = strings.Count(string(maps), "\n")
	h.memfds = strings.Count(string(maps), "/memfd:")
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return h, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "VmRSS:":
			h.rssKiB, err = strconv.Atoi(f[1])
		case "Threads:":
			h.threads, err = strconv.Atoi(f[1])
		}
		if err != nil {
			return h, err
		}
	}
	return h, nil
}

// daemonStat is the part of rnic stat --json the soak checks.
type daemonStat struct {
	Clients  []json.RawMessage `json:"clients"`
	QPs      []json.RawMessage `json:"qps"`
	Counters []struct {
		Scope    string            `json:"scope"`
		Dev      string            `json:"dev"`
		Counters map[string]uint64 `json:"counters"`
	} `json:"counters"`
}

// statOf runs rnic stat --json against the daemon (as the programs' user).
func statOf(d *daemon) (*daemonStat, error) {
	c := userCommand([]string{build.rnic, "stat", "--socket", d.socket, "--json"})
	out, err := c.Output()
	if err != nil {
		return nil, fmt.Errorf("rnic stat: %w\n%s", err, out)
	}
	var s daemonStat
	if err := json.Unmarshal(out, &s); err != nil {
		return nil, fmt.Errorf("rnic stat --json: %w\n%s", err, out)
	}
	return &s, nil
}

// counters are one scope's counters ("link" or "rnicd").
func (s *daemonStat) counters(scope string) map[string]uint64 {
	for _, c := range s.Counters {
		if c.Scope == scope {
			return c.Counters
		}
	}
	return nil
}

// leftovers says what the daemon still holds for clients that are gone,
// or "" when it holds nothing: no client, no QP, and nothing its reaper
// had to free (the soak destroys everything it made).
func (s *daemonStat) leftovers() string {
	var out []string
	if len(s.Clients) > 0 {
		out = append(out, fmt.Sprintf("%d clients", len(s.Clients)))
	}
	if len(s.QPs) > 0 {
		out = append(out, fmt.Sprintf("%d QPs", len(s.QPs)))
	}
	for k, v := range s.counters("rnicd") {
		if v > 0 && strings.HasPrefix(k, "reaped_") {
			out = append(out, fmt.Sprintf("%s %d", k, v))
		}
	}
	return strings.Join(out, ", ")
}

// TestSoakBaselineRule: the rule checkSoakBaseline applies tells a daemon
// that leaked a descriptor, a client's mapping or memory from one that only
// grew threads and heap within the slack.
func TestSoakBaselineRule(t *testing.T) {
	before := holding{fds: 19, maps: 73, threads: 8, rssKiB: 20000}
	for _, c := range []struct {
		name  string
		after holding
		ok    bool
	}{
		{"same", before, true},
		{"two new threads, their mappings, heap", holding{fds: 19, maps: 73 + 8 + mapsSlack, threads: 10, rssKiB: 30000}, true},
		{"a descriptor more", holding{fds: 20, maps: 73, threads: 8, rssKiB: 20000}, false},
		{"a memfd window more", holding{fds: 19, maps: 74, memfds: 1, threads: 8, rssKiB: 20000}, false},
		{"mappings no thread explains", holding{fds: 19, maps: 73 + mapsSlack + 1, threads: 8, rssKiB: 20000}, false},
		{"RSS beyond the slack", holding{fds: 19, maps: 73, threads: 8, rssKiB: 20000 + rssSlackKiB + 1}, false},
	} {
		if diff := backToBaseline(before, c.after); (diff == "") != c.ok {
			t.Errorf("%s: backToBaseline = %q, want ok %v", c.name, diff, c.ok)
		}
	}
}
