package main

import (
	"fmt"
	"strconv"
)

// qpsRows: issue 19's scale goal, traffic spread over 10,000 RC QP pairs
// of one NIC against one QP pair in the same run, the same bytes in all
// (4 KiB WRITEs: perf shrinks the depth to 3 so that 10,000 QPs' WRs fit
// one CQ).
func (b *bench) qpsRows() []row {
	ops := 50000 * b.iters
	run := func(qps int) (*perfResult, error) {
		return b.perf([]string{"perf", "write_bw", "-s", "4096", "-q", strconv.Itoa(qps), "-n", strconv.Itoa(ops / qps),
			"--no-raw", "-p", sidePort, "--rdma-port", rdmaPort, "--json"})
	}
	one, oneErr := run(1)
	var rows []row
	for _, qps := range []int{1000, 10000} {
		many, err := run(qps)
		r := row{workload: fmt.Sprintf("RoCEv2 WRITE bw 4 KiB over %d QPs", qps), err: err}
		if r.err == nil {
			r.err = oneErr
		}
		if r.err == nil && (many.BW == nil || one.BW == nil) {
			r.err = fmt.Errorf("no bandwidth in the output")
		}
		if r.err == nil {
			r.rnic = fmt.Sprintf("%.0f MB/s", many.BW.AvgMBps)
			r.baseline = fmt.Sprintf("1 QP %.0f MB/s", one.BW.AvgMBps)
			r.ratio, r.better = many.BW.AvgMBps/one.BW.AvgMBps, "higher is better"
		}
		rows = append(rows, r)
	}
	return rows
}
