package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"time"
)

// Ports of the bench's runs, away from rnic perf's defaults so that a run
// beside other users of loopback does not collide with them.
const (
	sidePort  = "18715"
	rdmaPort  = "4991"
	iwarpPort = "18716"
)

// perfResult is the part of `rnic perf --json` the table shows.
type perfResult struct {
	BW *struct {
		AvgMBps float64 `json:"bw_avg_mbps"`
	} `json:"bw"`
	Lat *latResult `json:"lat"`
	Raw *struct {
		MBps float64    `json:"mbps"`
		Lat  *latResult `json:"lat"`
	} `json:"raw_udp"` // kernel TCP's with --iwarp
	Check struct {
		Mismatched int64 `json:"mismatched"`
	} `json:"check"`
}

type latResult struct {
	Typical float64 `json:"t_typical_usec"`
	P99     float64 `json:"t_99_usec"`
}

// perfRows: one process, two NICs on loopback, each figure against the
// kernel's raw transport between the same addresses in the same run.
func (b *bench) perfRows() []row {
	bw := strconv.Itoa(100 * b.iters)
	lat := strconv.Itoa(300 * b.iters)
	specs := []struct {
		name string
		args []string
	}{
		{"RoCEv2 WRITE bw 64 KiB, MTU 4096", []string{"write_bw", "-s", "65536", "-n", bw}},
		{"RoCEv2 WRITE lat 8 B", []string{"write_lat", "-s", "8", "-n", lat}},
		{"RoCEv2 SEND lat 8 B", []string{"send_lat", "-s", "8", "-n", lat}},
		{"RoCEv2 READ lat 8 B", []string{"read_lat", "-s", "8", "-n", lat}},
		{"iWARP WRITE bw 64 KiB", []string{"write_bw", "--iwarp", "-s", "65536", "-n", bw}},
		{"iWARP WRITE lat 8 B", []string{"write_lat", "--iwarp", "-s", "8", "-n", lat}},
		{"iWARP SEND lat 8 B", []string{"send_lat", "--iwarp", "-s", "8", "-n", lat}},
	}
	var rows []row
	for _, s := range specs {
		args := append([]string{"perf"}, s.args...)
		args = append(args, "-p", sidePort, "--rdma-port", rdmaPort, "--iwarp-port", iwarpPort, "--json")
		res, err := b.perf(args)
		rows = append(rows, perfRow(s.name, res, err, rawName(s.args)))
	}
	return append(rows, b.qpsRow())
}

func rawName(args []string) string {
	for _, a := range args {
		if a == "--iwarp" {
			return "TCP"
		}
	}
	return "UDP"
}

// perf runs rnic with args and decodes its JSON.
func (b *bench) perf(args []string) (*perfResult, error) {
	res, _, err := b.perfCPU(args)
	return res, err
}

// perfCPU is perf that also returns the CPU time (user and system) the
// run took.
func (b *bench) perfCPU(args []string) (*perfResult, time.Duration, error) {
	var out, errOut bytes.Buffer
	cmd := exec.Command(b.rnic(), args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return nil, 0, fmt.Errorf("%v: %s", err, lastLine(errOut.String()))
	}
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	res, err := decodePerf(out.Bytes())
	return res, cpu, err
}

// decodePerf decodes rnic perf's JSON and checks the data arrived intact.
func decodePerf(out []byte) (*perfResult, error) {
	var res perfResult
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, fmt.Errorf("rnic perf output: %w", err)
	}
	if res.Check.Mismatched != 0 {
		return nil, fmt.Errorf("%d bytes arrived corrupted", res.Check.Mismatched)
	}
	return &res, nil
}

// perfRow puts a perf result against its raw baseline.
func perfRow(name string, res *perfResult, err error, raw string) row {
	r := row{workload: name, err: err}
	switch {
	case err != nil:
	case res.BW != nil && res.Raw != nil:
		r.rnic = fmt.Sprintf("%.0f MB/s", res.BW.AvgMBps)
		r.baseline = fmt.Sprintf("%s %.0f MB/s", raw, res.Raw.MBps)
		r.ratio, r.better = res.BW.AvgMBps/res.Raw.MBps, "higher is better"
	case res.Lat != nil && res.Raw != nil && res.Raw.Lat != nil:
		r.rnic = fmt.Sprintf("%.1f µs", res.Lat.Typical)
		r.baseline = fmt.Sprintf("%s %.1f µs", raw, res.Raw.Lat.Typical)
		r.ratio, r.better = res.Lat.Typical/res.Raw.Lat.Typical, "lower is better"
	default:
		r.err = fmt.Errorf("no figure or no raw baseline in the output")
	}
	return r
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := bytes.Split(bytes.TrimSpace([]byte(s)), []byte("\n"))
	return string(lines[len(lines)-1])
}
