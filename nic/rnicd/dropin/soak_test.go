package dropin

// TestSoak: our verifying C soak (soak/) through two rnicd daemons with
// seeded faults on their wires; then both daemons must be back where they
// were before it: descriptors, mappings and memory, and no object left.
// make soak runs it with SOAK_OPS=1000000.

import (
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// soakConfig is what the environment chose (make soak sets SOAK_OPS).
type soakConfig struct {
	ops        uint64
	seed       uint64
	qps        int
	size       int
	faults     string // each daemon's --faults, "" for none
	ackTimeout uint64 // the QPs' local ACK timeout exponent
	asan       bool   // the soak and the library under AddressSanitizer
}

// soakFaults are the default faults on each NIC's wire (both directions
// of the link are faulted, each by its sender): 1% loss, 1% reordering,
// 0.5% duplication, 0.1% corruption.
const soakFaults = "loss=0.01,reorder=0.01,dup=0.005,corrupt=0.001"

// soakAckTimeout is the QPs' local ACK timeout, 4.096 us * 2^17 = 537 ms:
// the soak keeps up to 128 MiB of READs and WRITEs in flight (16 QPs of 8
// operations of up to 1 MiB), which a loopback link under faults with
// both cores busy drains in seconds, and the timer runs from a QP's last
// progress. At 14 (67 ms, perftest's and rc_pingpong's choice, made for
// hardware links) such a run failed with RETRY_EXC_ERR on a QP whose READ
// response waited behind the other QPs' for 8 timeouts; a NIC with that
// much queued behind a slow link would too.
const soakAckTimeout = 17

func soakConfigFromEnv(t *testing.T) soakConfig {
	t.Helper()
	c := soakConfig{ops: 20000, seed: rand.Uint64N(1 << 32), qps: 16, size: 256 << 10, faults: soakFaults, asan: true,
		ackTimeout: soakAckTimeout}
	num := func(key string, dst *uint64) {
		if v := os.Getenv(key); v != "" {
			n, err := strconv.ParseUint(v, 0, 64)
			if err != nil {
				t.Fatalf("%s=%s: %v", key, v, err)
			}
			*dst = n
		}
	}
	var qps, size, asan uint64 = uint64(c.qps), uint64(c.size), 1
	num("SOAK_OPS", &c.ops)
	num("SOAK_SEED", &c.seed)
	num("SOAK_QPS", &qps)
	num("SOAK_MAX_SIZE", &size)
	num("SOAK_ASAN", &asan)
	num("SOAK_ACK_TIMEOUT", &c.ackTimeout)
	c.qps, c.size, c.asan = int(qps), int(size), asan != 0
	if v, ok := os.LookupEnv("SOAK_FAULTS"); ok {
		c.faults = v
		if v == "none" {
			c.faults = ""
		}
	}
	return c
}

// The soak program, built once per flavour (with AddressSanitizer or not).
var soakBuild struct {
	mu  sync.Mutex
	bin map[bool]string
}

// needSoak builds soak/ with its Makefile (with AddressSanitizer: SAN=1),
// -Wall -Wextra -Werror, linked to the system's libibverbs.so.
func needSoak(t *testing.T, asan bool) string {
	t.Helper()
	needLibrary(t)
	soakBuild.mu.Lock()
	defer soakBuild.mu.Unlock()
	if bin := soakBuild.bin[asan]; bin != "" {
		return bin
	}
	out := filepath.Join(build.dir, map[bool]string{false: "soak", true: "soak-asan"}[asan])
	args := []string{"--no-print-directory", "-s", "-C", "nic/rnicd/dropin/soak", "OUT=" + out}
	if asan {
		args = append(args, "SAN=1")
	}
	if b, err := command(build.root, "make", args...); err != nil {
		t.Fatalf("building soak/: %v\n%s", err, b)
	}
	if err := readableByAll(out); err != nil {
		t.Fatal(err)
	}
	if soakBuild.bin == nil {
		soakBuild.bin = map[bool]string{}
	}
	soakBuild.bin[asan] = filepath.Join(out, "soak")
	return soakBuild.bin[asan]
}

// soakRun is one soak: its responder on daemon a (NIC rnic0), its
// requester on b (rnic1).
type soakRun struct {
	t       *testing.T
	bin     string
	asan    bool
	a, b    *daemon
	port    int
	stream  bool // copy the requester's output (its progress) to stdout
	summary string
}

// program starts the soak through rnic exec on d, without the view: the
// two daemons' views would be two network namespaces, and the soak's two
// sides meet over TCP on the host's loopback.
func (s *soakRun) program(name string, d *daemon, stream bool, args ...string) *proc {
	env := []string{"ASAN_OPTIONS=exitcode=86:abort_on_error=0:detect_leaks=1"}
	if s.asan {
		env = append(env, "RNIC_LIBDIR="+filepath.Join(build.dir, "lib", "asan"))
	}
	argv := append([]string{build.rnic, "exec", "--no-view", "-S", d.socket, "--", s.bin}, args...)
	p := &proc{name: name, cmd: userCommand(argv), out: new(syncBuffer), done: make(chan struct{})}
	p.cmd.Env = append(append(os.Environ(), "RNIC_VIEW_DIR="+build.viewDir), env...)
	var out io.Writer = p.out
	if stream {
		out = io.MultiWriter(p.out, os.Stdout)
	}
	p.cmd.Stdout, p.cmd.Stderr, p.cmd.Dir = out, out, build.dir
	if err := p.cmd.Start(); err != nil {
		s.t.Fatalf("%s: %v", name, err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	s.t.Cleanup(p.kill)
	return p
}

// run runs the soak with args to its end and fails the test unless both
// sides exit 0; it keeps the requester's summary.
func (s *soakRun) run(deadline time.Duration, args ...string) {
	t := s.t
	t.Helper()
	port := strconv.Itoa(s.port)
	resp := s.program("soak responder", s.a, false, "-d", "rnic0", "-p", port)
	for !listening(resp.cmd.Process.Pid, s.port) {
		select {
		case <-resp.done:
			t.Fatalf("the responder ended before listening\n%s", resp.report())
		case <-time.After(20 * time.Millisecond):
		}
	}
	req := s.program("soak requester", s.b, s.stream,
		append(append([]string{"-d", "rnic1", "-p", port}, args...), "127.0.0.1")...)
	end := time.After(deadline)
	req.wait(end)
	if !req.ok() {
		resp.wait(time.After(10 * time.Second))
	}
	resp.wait(end)
	if !req.ok() || !resp.ok() {
		t.Fatalf("the soak failed\n%s\n%s\n%s\n%s", req.report(), resp.report(), s.a.p.report(), s.b.p.report())
	}
	s.summary = req.out.String()
}

var soakOpsLine = regexp.MustCompile(`(?m)^soak: ops (\d+) bytes (\d+) seconds ([0-9.]+) ops/s ([0-9.]+)`)

func TestSoak(t *testing.T) {
	cfg := soakConfigFromEnv(t)
	bin := needSoak(t, cfg.asan)
	var cleanups []func()
	t.Cleanup(func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	})
	daemons := make([]*daemon, 2)
	for i, name := range []string{"rnic0", "rnic1"} {
		var flags []string
		if cfg.faults != "" {
			flags = []string{"--faults", fmt.Sprintf("%s,seed=%d", cfg.faults, cfg.seed+uint64(i))}
		}
		d, err := startSoloDaemon(func(f func()) { cleanups = append(cleanups, f) }, name, flags...)
		if err != nil {
			t.Fatal(err)
		}
		daemons[i] = d
	}
	s := &soakRun{t: t, bin: bin, asan: cfg.asan, a: daemons[0], b: daemons[1], port: freeTCPPort(t),
		stream: testing.Verbose() && cfg.ops >= 100000}
	common := []string{"-q", strconv.Itoa(cfg.qps), "-s", strconv.Itoa(cfg.size), "-S", strconv.FormatUint(cfg.seed, 10),
		"-t", strconv.FormatUint(cfg.ackTimeout, 10)}

	// A short soak first, so that the baseline is the daemons' state once
	// they have served a soak (pools, buffers and the Go heap grown once).
	s.run(2*time.Minute, append([]string{"-n", "500"}, common...)...)
	before := soakHoldings(t, daemons)
	statsBefore := soakStats(t, daemons)

	start := time.Now()
	s.port = freeTCPPort(t)
	s.run(5*time.Minute+time.Duration(cfg.ops)*2*time.Millisecond,
		append([]string{"-n", strconv.FormatUint(cfg.ops, 10)}, common...)...)
	elapsed := time.Since(start)
	m := soakOpsLine.FindStringSubmatch(s.summary)
	if m == nil || m[1] != strconv.FormatUint(cfg.ops, 10) {
		t.Fatalf("the requester's summary does not say %d operations:\n%s", cfg.ops, s.summary)
	}
	t.Logf("soak: %d operations, seed %d, faults %q, AddressSanitizer %v: %s in total\n%s",
		cfg.ops, cfg.seed, cfg.faults, cfg.asan, elapsed.Round(time.Millisecond), s.summary)
	checkSoakBaseline(t, daemons, before)
	reportSoakCounters(t, daemons, statsBefore, cfg.faults != "")
}

// soakHoldings reads both daemons' holdings.
func soakHoldings(t *testing.T, ds []*daemon) []holding {
	t.Helper()
	hs := make([]holding, len(ds))
	for i, d := range ds {
		h, err := holdingOf(d)
		if err != nil {
			t.Fatal(err)
		}
		hs[i] = h
	}
	return hs
}

func soakStats(t *testing.T, ds []*daemon) []*daemonStat {
	t.Helper()
	ss := make([]*daemonStat, len(ds))
	for i, d := range ds {
		s, err := statOf(d)
		if err != nil {
			t.Fatal(err)
		}
		ss[i] = s
	}
	return ss
}

// rssSlackKiB is how far a daemon's RSS may end above its baseline: Go
// keeps heap it freed until its scavenger returns it, and new OS threads
// bring their stacks. Measured after 1,000,000 operations: +7.9 MiB on a
// clean wire, at most +1.6 MiB in two runs under the default faults (the
// package README's soak section); 24 MiB is three times the most seen. A
// leak of the soak's registered memory would be hundreds.
const rssSlackKiB = 24 << 10

// mapsSlack is how many more anonymous mappings a daemon may hold after
// the soak beyond 4 for each new OS thread (its stack and guard page, and
// glibc's arena of the thread with its reserve): the Go heap's growth
// splits its reservation. Mappings of memfds (clients' memory and rings)
// must be exactly as before.
const mapsSlack = 8

// backToBaseline says how after differs from before beyond the slack, or
// "" when it does not.
func backToBaseline(before, after holding) string {
	var out []string
	if after.fds != before.fds {
		out = append(out, fmt.Sprintf("%d descriptors, %d before", after.fds, before.fds))
	}
	if after.memfds != before.memfds {
		out = append(out, fmt.Sprintf("%d mappings of memfds, %d before", after.memfds, before.memfds))
	}
	allowed := before.maps - before.memfds + 4*max(0, after.threads-before.threads) + mapsSlack
	if other := after.maps - after.memfds; other > allowed {
		out = append(out, fmt.Sprintf("%d other mappings, %d allowed (%d before, %d new threads)", other, allowed,
			before.maps-before.memfds, after.threads-before.threads))
	}
	if after.rssKiB > before.rssKiB+rssSlackKiB {
		out = append(out, fmt.Sprintf("RSS %d KiB, %d KiB before (slack %d KiB)", after.rssKiB, before.rssKiB, rssSlackKiB))
	}
	return strings.Join(out, "; ")
}

// checkSoakBaseline waits (a few seconds at most: the reaper and the Go
// runtime settle) for both daemons to hold what they held before, within
// the slack; and for rnic stat to show nothing but the daemon.
func checkSoakBaseline(t *testing.T, ds []*daemon, before []holding) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for i, d := range ds {
		var after holding
		var err error
		for {
			if after, err = holdingOf(d); err != nil {
				t.Fatal(err)
			}
			if backToBaseline(before[i], after) == "" || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("%s: before %v; after %v (RSS %+d KiB)", d.p.name, before[i], after, after.rssKiB-before[i].rssKiB)
		if diff := backToBaseline(before[i], after); diff != "" {
			t.Errorf("%s is not back to its baseline after the soak: %s", d.p.name, diff)
		}
		st, err := statOf(d)
		if err != nil {
			t.Fatal(err)
		}
		if left := st.leftovers(); left != "" {
			t.Errorf("%s still holds objects after the soak: %s", d.p.name, left)
		}
	}
}

// soakErrorCounters are the daemon's counters of clients' errors: a soak
// makes none.
var soakErrorCounters = []string{"bad_messages", "bad_wqes", "ring_index_errors", "limit_rejections",
	"events_dropped", "accept_errors", "clients_refused"}

// reportSoakCounters logs what the soak's run cost each NIC: the faults
// injected and the retransmissions that recovered from them; it fails on
// a client error counted, and when faults were asked for but none shows.
func reportSoakCounters(t *testing.T, ds []*daemon, before []*daemonStat, faults bool) {
	t.Helper()
	for i, d := range ds {
		st, err := statOf(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range soakErrorCounters {
			if v := st.counters("rnicd")[k] - before[i].counters("rnicd")[k]; v > 0 {
				t.Errorf("%s counted %s %d during the soak", d.p.name, k, v)
			}
		}
		link, link0 := st.counters("link"), before[i].counters("link")
		var shown []string
		injected := uint64(0)
		for _, k := range slices.Sorted(maps.Keys(link)) {
			v := link[k] - link0[k]
			if v == 0 {
				continue
			}
			shown = append(shown, fmt.Sprintf("%s %d", k, v))
			if strings.HasPrefix(k, "fault_") {
				injected += v
			}
		}
		t.Logf("%s during the soak: %s", d.p.name, strings.Join(shown, ", "))
		if faults && injected == 0 {
			t.Errorf("%s: faults were asked for, but no fault_ counter moved", d.p.name)
		}
	}
}
