package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// simTarget is the goal for the simulated mode, in packets (sent
// and received) per CPU-second through the RC engine at 10% loss.
const simTarget = 2e6

// simRun is one `rnic sim` run's cost.
type simRun struct {
	wall, cpu time.Duration
	rssKB     int64
	pkts      int64 // sent_pkts + rcvd_pkts of both NICs
}

// simRows: packets per CPU-second at 10% loss against the target,
// and many QP pairs against few.
func (b *bench) simRows() []row {
	ops := strconv.Itoa(2000 * b.iters)
	lossy, err := b.sim("--ops", ops, "--qps", "16", "--loss", "0.1", "--seed", "19")
	r1 := row{workload: "rnic sim, 10% loss: packets per CPU-second", err: err}
	if err == nil {
		rate := float64(lossy.pkts) / lossy.cpu.Seconds()
		r1.rnic = fmt.Sprintf("%.2f M/s (%d pkts, %v wall)", rate/1e6, lossy.pkts, lossy.wall.Round(time.Millisecond))
		r1.baseline = fmt.Sprintf("target %.0f M/s", simTarget/1e6)
		r1.ratio, r1.better = rate/simTarget, "higher is better"
	}
	small := []string{"--ops", "20000", "--depth", "1", "--max-msg", "64", "--seed", "19"}
	few, errFew := b.sim(append(small, "--qps", "100")...)
	many, errMany := b.sim(append(small, "--qps", "4096")...)
	r2 := row{workload: "rnic sim --qps 4096, 20,000 ops", err: errMany}
	if r2.err == nil {
		r2.err = errFew
	}
	if r2.err == nil {
		r2.rnic = fmt.Sprintf("%v, %d MB RSS", many.wall.Round(time.Millisecond), many.rssKB>>10)
		r2.baseline = fmt.Sprintf("--qps 100: %v, %d MB", few.wall.Round(time.Millisecond), few.rssKB>>10)
		r2.ratio, r2.better = many.wall.Seconds()/few.wall.Seconds(), "wall time; lower is better"
	}
	return []row{r1, r2}
}

// sim runs `rnic sim` with args and reads its cost and its packet counters.
func (b *bench) sim(args ...string) (*simRun, error) {
	var out, errOut bytes.Buffer
	cmd := exec.Command(b.rnic(), append([]string{"sim"}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("rnic sim %s: %v: %s", strings.Join(args, " "), err, lastLine(errOut.String()))
	}
	r := &simRun{wall: time.Since(start), cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.rssKB = ru.Maxrss
	}
	r.pkts = countPackets(out.String())
	return r, nil
}

// counterLine is a line of rnic sim's counter table: name, then rnic0's
// and rnic1's values.
var counterLine = regexp.MustCompile(`^(sent_pkts|rcvd_pkts)\s+(\d+)\s+(\d+)\s*$`)

func countPackets(out string) int64 {
	var n int64
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if m := counterLine.FindStringSubmatch(sc.Text()); m != nil {
			a, _ := strconv.ParseInt(m[2], 10, 64)
			c, _ := strconv.ParseInt(m[3], 10, 64)
			n += a + c
		}
	}
	return n
}
