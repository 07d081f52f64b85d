package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"syscall"
)

// manyQPs is the scale goal: traffic spread over this many RC QP
// pairs at ≥ 0.8× one QP's bandwidth.
const manyQPs = 10000

// qpsResult is the part of `rnic perf --json` a many-QP row shows.
type qpsResult struct {
	BW *struct {
		AvgMBps float64 `json:"bw_avg_mbps"`
		QPsDone int     `json:"qps_done"`
	} `json:"bw"`
	ConnectSeconds float64 `json:"connect_seconds"`
	Check          struct {
		Mismatched int64 `json:"mismatched"`
	} `json:"check"`
}

// qpsRow: 64 KiB WRITEs spread over manyQPs QP pairs against one QP pair
// moving the same bytes, both in this run, without the raw baseline.
func (b *bench) qpsRow() row {
	r := row{workload: fmt.Sprintf("RoCEv2 WRITE bw 64 KiB over %d QPs (vs --qps 1)", manyQPs)}
	// 5 operations per QP: a run of one is mostly ramp and tail.
	one, _, err := b.qpsRun(1, 5*manyQPs*b.iters)
	if err != nil {
		r.err = fmt.Errorf("--qps 1: %w", err)
		return r
	}
	many, rssKB, err := b.qpsRun(manyQPs, 5*b.iters)
	if err != nil {
		r.err = fmt.Errorf("--qps %d: %w", manyQPs, err)
		return r
	}
	if many.BW.QPsDone != manyQPs {
		r.err = fmt.Errorf("--qps %d: %d QPs completed their operations", manyQPs, many.BW.QPsDone)
		return r
	}
	r.rnic = fmt.Sprintf("%.0f MB/s (connect %.2f s, %d MB RSS)", many.BW.AvgMBps, many.ConnectSeconds, rssKB>>10)
	r.baseline = fmt.Sprintf("--qps 1 %.0f MB/s", one.BW.AvgMBps)
	r.ratio, r.better = many.BW.AvgMBps/one.BW.AvgMBps, "higher is better (target 0.8)"
	return r
}

// qpsRun runs a WRITE bw test of qps QP pairs, iters each, and returns its
// result and the process's peak RSS.
func (b *bench) qpsRun(qps, iters int) (*qpsResult, int64, error) {
	var out, errOut bytes.Buffer
	cmd := exec.Command(b.rnic(), "perf", "write_bw", "-s", "65536", "-m", "4096", "--qps", strconv.Itoa(qps),
		"-n", strconv.Itoa(iters), "--no-raw", "--json", "-p", sidePort, "--rdma-port", rdmaPort)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return nil, 0, fmt.Errorf("%v: %s", err, lastLine(errOut.String()))
	}
	var res qpsResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return nil, 0, fmt.Errorf("rnic perf output: %w", err)
	}
	if res.Check.Mismatched != 0 {
		return nil, 0, fmt.Errorf("%d bytes arrived corrupted", res.Check.Mismatched)
	}
	if res.BW == nil {
		return nil, 0, fmt.Errorf("no bandwidth in the output")
	}
	var rss int64
	if u, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = u.Maxrss
	}
	return &res, rss, nil
}
