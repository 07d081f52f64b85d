package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The drop-in's goals: an unmodified perftest program through rnicd as
// fast as rnic perf (the Go client) through the same daemon, and two
// programs on two NICs of one rnicd (frames looped in the daemon) faster
// than raw UDP between two processes.
const (
	dropinLatTarget = 1.2  // t_typical, drop-in / Go client
	dropinBWTarget  = 0.95 // bandwidth, drop-in / Go client
	dropinTailMax   = 3.0  // 99th percentile / t_typical
	dropinTries     = 3    // best of
	// dropinCQMod is the CQ moderation (-Q) both sides of a bandwidth
	// row run with: one signalled WR in this many. perftest signals
	// every WR of a message above 8 KiB unless told otherwise, rnic perf
	// one in 100; given the same value the two post and poll alike. 1 is
	// what an unmodified perftest does at 64 KiB.
	dropinCQMod = "1"
)

// dropinRows: perftest's programs on the drop-in libibverbs against rnic
// perf, both through one rnicd with two UDP NICs, best of dropinTries
// each, taken in turns; then the same daemon's 8-byte WRITE latency with
// its frames looped in memory against raw UDP across two processes and
// against the same daemon with --no-loopback.
func (b *bench) dropinRows() []row {
	if _, err := exec.LookPath("ib_write_lat"); err != nil {
		return []row{{workload: "perftest on the drop-in libibverbs", skip: "perftest is not installed"}}
	}
	if _, err := os.Stat(filepath.Join(b.bin, "..", "lib", "libibverbs.so.1")); err != nil {
		return []row{{workload: "perftest on the drop-in libibverbs", skip: "the drop-in library is not built (make build)"}}
	}
	d, err := b.startDaemon()
	if err != nil {
		return []row{{workload: "perftest on the drop-in libibverbs", err: err}}
	}
	lat := strconv.Itoa(300 * b.iters)
	bw := strconv.Itoa(100 * b.iters)
	cqMod := []string{"-Q", dropinCQMod}
	specs := []struct {
		prog, size, iters string
		extra             []string // flags both perftest and rnic perf take
	}{{"write_lat", "8", lat, nil}, {"write_bw", "65536", bw, cqMod}, {"read_bw", "65536", bw, cqMod}, {"send_bw", "65536", bw, cqMod}}
	var rows []row
	var looped *dropinRun
	for _, s := range specs {
		r, c, g := b.dropinRow(d, dropinTest{s.prog, s.size, s.iters, s.extra})
		rows = append(rows, r)
		if s.prog == "write_lat" && g == nil {
			looped = c
		}
	}
	d.stop()
	return append(rows, b.loopbackRow(looped, lat))
}

// dropinRun is one run's figure and what the daemon spent on it.
type dropinRun struct {
	lat, p99, bw float64 // µs, µs, MB/s
	cost         daemonCost
}

// dropinTest is one perftest program's run: its test (write_lat,
// write_bw, ...), message size, iterations, and flags that perftest and
// rnic perf both take with the same meaning.
type dropinTest struct {
	test, size, iters string
	extra             []string
}

// dropinRow runs t through d by the drop-in and by rnic perf, in turns,
// and puts the best of each side by side. It returns the drop-in's best
// run, and the error of either side.
func (b *bench) dropinRow(d *daemon, t dropinTest) (row, *dropinRun, error) {
	flags := strings.Join(append([]string{"-s", t.size}, t.extra...), " ")
	r := row{workload: fmt.Sprintf("drop-in ib_%s %s through rnicd (vs rnic perf, same daemon)", t.test, flags)}
	var best, goBest *dropinRun
	for range dropinTries {
		c, err := b.dropinOnce(d, t)
		if err != nil {
			r.err = fmt.Errorf("drop-in: %w", err)
			return r, nil, err
		}
		g, err := b.goOnce(d, t)
		if err != nil {
			r.err = fmt.Errorf("rnic perf: %w", err)
			return r, nil, err
		}
		best, goBest = better(best, c), better(goBest, g)
	}
	if best.bw > 0 {
		r.rnic, r.baseline = fmt.Sprintf("%.0f MB/s", best.bw), fmt.Sprintf("rnic perf %.0f MB/s", goBest.bw)
		r.ratio, r.better = best.bw/goBest.bw, "higher is better"
		if r.ratio < dropinBWTarget {
			r.note = fmt.Sprintf("below %.2f×; %s", dropinBWTarget, costs(best, goBest))
		}
		return r, best, nil
	}
	r.rnic = fmt.Sprintf("%.1f µs (99%% %.1f)", best.lat, best.p99)
	r.baseline = fmt.Sprintf("rnic perf %.1f µs (99%% %.1f)", goBest.lat, goBest.p99)
	r.ratio, r.better = best.lat/goBest.lat, "lower is better"
	if r.ratio > dropinLatTarget || best.p99 > dropinTailMax*best.lat {
		r.note = fmt.Sprintf("target ≤ %.1f× and 99%% ≤ %.0f× t_typical; %s", dropinLatTarget, dropinTailMax, costs(best, goBest))
	}
	return r, best, nil
}

// better keeps the better of two runs: the lower latency, the higher
// bandwidth.
func better(a, b *dropinRun) *dropinRun {
	switch {
	case a == nil:
		return b
	case b.bw > 0 && b.bw > a.bw, b.bw == 0 && b.lat < a.lat:
		return b
	}
	return a
}

// costs says where the time of two runs went, per iteration.
func costs(c, g *dropinRun) string {
	return fmt.Sprintf("per iteration, rnicd's CPU %.1f µs and its wait for a CPU %.1f µs with the drop-in, %.1f and %.1f µs with rnic perf",
		c.cost.cpu, c.cost.wait, g.cost.cpu, g.cost.wait)
}

// loopbackRow: the drop-in's 8-byte WRITE latency through rnicd, whose
// two NICs loop their frames in memory, against raw UDP across two
// processes, and against the same through kernel sockets
// (--no-loopback).
func (b *bench) loopbackRow(looped *dropinRun, iters string) row {
	r := row{workload: "drop-in ib_write_lat -s 8, two NICs of one rnicd (vs raw UDP across processes)"}
	if looped == nil {
		r.err = fmt.Errorf("no drop-in latency run")
		return r
	}
	raw, err := b.twoProcesses([]string{"write_lat", "-s", "8", "-n", iters}, nil)
	if err == nil && (raw.Raw == nil || raw.Raw.Lat == nil) {
		err = fmt.Errorf("rnic perf gave no raw UDP latency")
	}
	if err != nil {
		r.err = fmt.Errorf("raw UDP across processes: %w", err)
		return r
	}
	d, err := b.startDaemon("--no-loopback")
	if err != nil {
		r.err = err
		return r
	}
	defer d.stop()
	var kernel *dropinRun
	for range dropinTries {
		k, err := b.dropinOnce(d, dropinTest{test: "write_lat", size: "8", iters: iters})
		if err != nil {
			r.err = fmt.Errorf("--no-loopback: %w", err)
			return r
		}
		kernel = better(kernel, k)
	}
	r.rnic = fmt.Sprintf("%.1f µs (--no-loopback %.1f µs)", looped.lat, kernel.lat)
	r.baseline = fmt.Sprintf("UDP across processes %.1f µs", raw.Raw.Lat.Typical)
	r.ratio, r.better = looped.lat/raw.Raw.Lat.Typical, "lower is better"
	r.note = fmt.Sprintf("per iteration, rnicd's CPU %.1f µs looped, %.1f µs through kernel sockets", looped.cost.cpu, kernel.cost.cpu)
	return r
}

// daemon is a running rnicd of the drop-in rows.
type daemon struct {
	cmd  *exec.Cmd
	sock string
	stop func()
}

// startDaemon starts an rnicd with two UDP NICs on loopback (as
// startRnicd) with extra flags.
func (b *bench) startDaemon(extra ...string) (*daemon, error) {
	sock := filepath.Join(b.tmp, fmt.Sprintf("rnicd-%d.sock", time.Now().UnixNano()))
	args := append([]string{"--udp", "127.0.0.2:" + rdmaPort, "--mtu", "9000",
		"--device", "name=rnic1,udp=127.0.0.3:" + rdmaPort + ",mtu=9000", "--socket", sock}, extra...)
	cmd := exec.Command(b.rnicd(), args...)
	wait, err := startUntil(cmd, "rnicd: serving", true)
	if err != nil {
		return nil, fmt.Errorf("rnicd: %w", err)
	}
	return &daemon{cmd: cmd, sock: sock, stop: func() { cmd.Process.Kill(); wait() }}, nil
}

// dropinOnce runs perftest's ib_TEST, server on rnic0 and client on
// rnic1, through rnic exec, and reads the client's figure.
func (b *bench) dropinOnce(d *daemon, t dropinTest) (*dropinRun, error) {
	common := []string{"exec", "-S", d.sock, "--no-view", "--", "ib_" + t.test, "-p", sidePort, "-x", "0", "-F", "-s", t.size, "-n", t.iters}
	common = append(common, t.extra...)
	server := exec.Command(b.rnic(), append(common, "-d", "rnic0")...)
	var srvOut bytes.Buffer
	server.Stdout, server.Stderr = &srvOut, &srvOut
	if err := server.Start(); err != nil {
		return nil, err
	}
	defer server.Wait()
	time.Sleep(300 * time.Millisecond) // perftest's server listens on its side channel
	before := costOf(d.cmd.Process.Pid)
	out, err := exec.Command(b.rnic(), append(common, "-d", "rnic1", "127.0.0.2")...).CombinedOutput()
	cost := costOf(d.cmd.Process.Pid).since(before)
	if err != nil {
		server.Process.Kill()
		return nil, fmt.Errorf("%v: %s", err, lastLine(string(out)))
	}
	run, err := parsePerftest(string(out), t.size, t.iters)
	if err != nil {
		return nil, err
	}
	run.cost = cost.per(t.iters)
	return run, nil
}

// goOnce runs the same test by rnic perf in two processes through d.
func (b *bench) goOnce(d *daemon, t dropinTest) (*dropinRun, error) {
	before := costOf(d.cmd.Process.Pid)
	args := append([]string{t.test, "-s", t.size, "-n", t.iters}, t.extra...)
	res, err := b.twoProcesses(args, []string{"rnic0@" + d.sock, "rnic1@" + d.sock})
	cost := costOf(d.cmd.Process.Pid).since(before)
	if err != nil {
		return nil, err
	}
	run := &dropinRun{cost: cost.per(t.iters)}
	switch {
	case res.BW != nil:
		run.bw = res.BW.AvgMBps
	case res.Lat != nil:
		run.lat, run.p99 = res.Lat.Typical, res.Lat.P99
	default:
		return nil, fmt.Errorf("rnic perf printed no figure")
	}
	return run, nil
}

// parsePerftest reads the result row of perftest's client: for a latency
// test t_typical and the 99th percentile, for a bandwidth test the
// average.
func parsePerftest(out, size, iters string) (*dropinRun, error) {
	re := regexp.MustCompile(`(?m)^\s*` + size + `\s+` + iters + `\s+([\d.]+(?:\s+[\d.]+)*)`)
	m := re.FindStringSubmatch(out)
	if m == nil {
		return nil, fmt.Errorf("no result row in perftest's output: %s", lastLine(out))
	}
	var f []float64
	for _, s := range strings.Fields(m[1]) {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, err
		}
		f = append(f, v)
	}
	switch {
	case len(f) >= 7: // t_min t_max t_typical t_avg t_stdev 99% 99.9%
		return &dropinRun{lat: f[2], p99: f[5]}, nil
	case len(f) >= 2: // BW peak, BW average, MsgRate
		return &dropinRun{bw: f[1]}, nil
	}
	return nil, fmt.Errorf("short result row %q", m[0])
}

// daemonCost is what a process's threads spent, from the scheduler's
// statistics: CPU time and time runnable but waiting for a CPU. Both
// are load-dependent, but unlike a latency they say which side of the
// scheduler the time went to.
type daemonCost struct {
	cpu, wait float64 // µs (per iteration once divided)
}

// costOf sums /proc/PID/task/*/schedstat (ns on a CPU, ns waiting on a
// run queue, timeslices).
func costOf(pid int) daemonCost {
	var c daemonCost
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) < 2 {
			continue
		}
		on, _ := strconv.ParseFloat(f[0], 64)
		wait, _ := strconv.ParseFloat(f[1], 64)
		c.cpu += on / 1e3
		c.wait += wait / 1e3
	}
	return c
}

func (c daemonCost) since(before daemonCost) daemonCost {
	return daemonCost{cpu: c.cpu - before.cpu, wait: c.wait - before.wait}
}

func (c daemonCost) per(iters string) daemonCost {
	n, _ := strconv.ParseFloat(iters, 64)
	if n <= 0 {
		return c
	}
	return daemonCost{cpu: c.cpu / n, wait: c.wait / n}
}
