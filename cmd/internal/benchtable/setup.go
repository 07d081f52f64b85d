package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// The goals for QP setup: 10,000 RC QPs created and connected in at
// most a second, at most 8 KiB of engine state per idle QP.
const (
	setupPairs     = 10000
	setupTargetSec = 1.0
	idleTargetB    = 8 << 10
)

// setupRows runs the BenchmarkCreateConnectQPs of the embedded NIC and of
// the RoCE engine for setupPairs iterations and puts them against the
// goals.
func (b *bench) setupRows() []row {
	res, err := goBench("BenchmarkCreateConnectQPs", setupPairs, "./nic/embedded", "./roce")
	if err != nil {
		return []row{{workload: "QP setup (go test -bench)", err: err}}
	}
	var rows []row
	if m, ok := res["embedded.BenchmarkCreateConnectQPs"]; ok {
		sec := m["ns/op"] * setupPairs / 1e9
		rows = append(rows, row{workload: "create+connect 10,000 RC QP pairs, embedded (one NIC each side)",
			rnic:     fmt.Sprintf("%.2f s for 20,000 QPs (%.1f KiB/pair with queues of 8)", sec, m["heap-B/pair"]/1024),
			baseline: fmt.Sprintf("target %.0f s per 10,000 QPs", setupTargetSec),
			ratio:    sec / setupTargetSec / 2, better: "per QP; lower is better"})
	}
	for _, d := range []string{"1", "128"} {
		m, ok := res["roce.BenchmarkCreateConnectQPs/depth="+d]
		if !ok {
			continue
		}
		rows = append(rows, row{workload: "roce engine heap per idle connected RC QP, queues of " + d,
			rnic:     fmt.Sprintf("%.0f B (%.1f µs to create+connect)", m["heap-B/QP"], m["ns/op"]/1e3),
			baseline: fmt.Sprintf("target %d B", idleTargetB),
			ratio:    m["heap-B/QP"] / idleTargetB, better: "lower is better"})
	}
	return append(rows, b.rnicdSetupRow(res["embedded.BenchmarkCreateConnectQPs"]), b.setupStepsRow(), dropinSetupRow())
}

// dropinSetupRow: 10,000 QPs created and taken to RTS by an unmodified C
// program through the drop-in libibverbs and rnicd, against the goal.
func dropinSetupRow() row {
	r := row{workload: "create+connect 10,000 RC QPs through rnicd, C program on the drop-in libibverbs"}
	res, err := goBench("BenchmarkDropinSetup", setupPairs, "./nic/rnicd/dropin")
	m, ok := res["dropin.BenchmarkDropinSetup"]
	switch {
	case err != nil:
		r.err = err
	case !ok:
		r.err = fmt.Errorf("no result (gcc and libibverbs-dev missing?)")
	default:
		sec := m["ns/op"] * setupPairs / 1e9
		r.rnic = fmt.Sprintf("%.2f s (µs per QP: create %.0f, INIT+RTR+RTS %.0f; destroy %.0f)",
			sec, m["create-µs/QP"], m["connect-µs/QP"], m["destroy-µs/QP"])
		r.baseline = fmt.Sprintf("target %.0f s per 10,000 QPs", setupTargetSec)
		r.ratio, r.better = sec/setupTargetSec, "lower is better"
	}
	return r
}

// rnicdPairs is how many QP pairs the daemon's setup benchmark creates:
// every QP is a few round trips to the daemon.
const rnicdPairs = 1000

// rnicdSetupRow: QP setup through rnicd (one client; the daemon in
// another process, as for every program, and in this one) against the
// embedded NIC's.
func (b *bench) rnicdSetupRow(embedded map[string]float64) row {
	r := row{workload: "create+connect RC QP pairs through rnicd (1,000 pairs, daemon in another process)"}
	res, err := goBench("BenchmarkCreateConnectQPs", rnicdPairs, "./nic/rnicd/client")
	m, ok := res["client.BenchmarkCreateConnectQPs/daemon=process"]
	in := res["client.BenchmarkCreateConnectQPs/daemon=in-process"]
	switch {
	case err != nil:
		r.err = err
	case !ok || in == nil || embedded == nil:
		r.err = fmt.Errorf("no result")
	default:
		r.rnic = fmt.Sprintf("%.0f µs/pair (daemon in the process: %.0f µs/pair, %.1f goroutines/pair)",
			m["ns/op"]/1e3, in["ns/op"]/1e3, in["goroutines/pair"])
		r.baseline = fmt.Sprintf("embedded %.0f µs/pair", embedded["ns/op"]/1e3)
		r.ratio, r.better = m["ns/op"]/embedded["ns/op"], "lower is better"
	}
	return r
}

// benchLine is a line of go test -bench output: name-GOMAXPROCS, N, then
// value-unit pairs.
var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(-\d+)?\s+\d+\s+(.*)$`)

// goBench runs one benchmark n times in pkgs and returns each result's
// metrics by unit, by PACKAGE.Benchmark (the package's last element).
func goBench(name string, n int, pkgs ...string) (map[string]map[string]float64, error) {
	return goBenchEnv(name, n, nil, pkgs...)
}

// goBenchEnv is goBench with env added to the benchmark's environment.
func goBenchEnv(name string, n int, env []string, pkgs ...string) (map[string]map[string]float64, error) {
	args := append([]string{"test", "-run", "^$", "-bench", "^" + name + "$", "-benchtime", strconv.Itoa(n) + "x"}, pkgs...)
	var out, errOut bytes.Buffer
	cmd := exec.Command(goTool(), args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go %s: %v: %s", strings.Join(args, " "), err, lastLine(out.String()+errOut.String()))
	}
	res := map[string]map[string]float64{}
	sc := bufio.NewScanner(&out)
	pkg := ""
	for sc.Scan() {
		if p, ok := strings.CutPrefix(sc.Text(), "pkg: "); ok {
			pkg = path.Base(p)
		}
		m := benchLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		f := strings.Fields(m[3])
		metrics := map[string]float64{}
		for i := 0; i+1 < len(f); i += 2 {
			if v, err := strconv.ParseFloat(f[i], 64); err == nil {
				metrics[f[i+1]] = v
			}
		}
		res[pkg+"."+m[1]] = metrics
	}
	return res, nil
}

// goTool is the go command make runs with ($GO), else go.
func goTool() string {
	if g := os.Getenv("GO"); g != "" {
		return g
	}
	return "go"
}

// setupStepTries is how many times each side of the setup comparison
// runs, in turns; the best of each counts.
const setupStepTries = 3

// setupStepsRow: the Go client against the C library, the same steps
// through a daemon in another process (BenchmarkSetupSteps does what
// the C program of BenchmarkDropinSetup does): create rnicdPairs RC QPs,
// take each to RTS, each on an rnicd of the binary built. Runs alternate
// so that both see the same load; the sleeps and CPU time of the client's
// process while it connects depend on it less than the times do.
func (b *bench) setupStepsRow() row {
	r := row{workload: "create + INIT→RTS per RC QP through rnicd, Go client (vs the C library, same steps)"}
	d, err := b.startDaemon("--max-qps", strconv.Itoa(2*rnicdPairs))
	if err != nil {
		r.err = err
		return r
	}
	defer d.stop()
	var goBest, cBest map[string]float64
	for range setupStepTries {
		g, err := goBenchEnv("BenchmarkSetupSteps", rnicdPairs, []string{"RNIC_BENCH_SOCKET=" + d.sock}, "./nic/rnicd/client")
		if err != nil {
			r.err = err
			return r
		}
		c, err := goBench("BenchmarkDropinSetup", rnicdPairs, "./nic/rnicd/dropin")
		if err != nil {
			r.err = err
			return r
		}
		goBest = fasterSetup(goBest, g["client.BenchmarkSetupSteps"])
		cBest = fasterSetup(cBest, c["dropin.BenchmarkDropinSetup"])
	}
	if goBest == nil || cBest == nil {
		r.err = fmt.Errorf("no result (gcc and libibverbs-dev missing?)")
		return r
	}
	r.rnic, r.baseline = "Go "+setupSteps(goBest), "C "+setupSteps(cBest)
	r.ratio, r.better = goBest["ns/op"]/cBest["ns/op"], "lower is better"
	if r.ratio > 1 {
		r.note = "target ≤ 1×; the Go client's process sleeps where the C library's does not " +
			"(its caller spins on the socket and yields its thread as C's does, but the Go runtime's idle threads " +
			"are woken as replies reach the netpoller and go back to sleep: each a wake-up the daemon's reply pays " +
			"and, on a busy machine, a wait for a CPU)"
	}
	return r
}

// setupSteps says what one QP's setup took.
func setupSteps(m map[string]float64) string {
	return fmt.Sprintf("%.0f µs (create %.0f, INIT+RTR+RTS %.0f µs with %.1f sleeps, %.0f µs CPU)", m["ns/op"]/1e3,
		m["create-µs/QP"], m["connect-µs/QP"], m["connect-sleeps/QP"], m["connect-cpu-µs/QP"])
}

// fasterSetup keeps the faster of two setup results (either may be nil).
func fasterSetup(a, b map[string]float64) map[string]float64 {
	if a == nil || (b != nil && b["ns/op"] < a["ns/op"]) {
		return b
	}
	return a
}
