package main

import (
	"fmt"
	"io"
	"syscall"
	"time"

	"github.com/rnic/rnic/cmd/internal/sim"
)

// simClock measures a sim run's wall and CPU time for --timing.
type simClock struct {
	wall time.Time
	cpu  time.Duration
}

func startSimClock() simClock { return simClock{wall: time.Now(), cpu: processCPU()} }

// processCPU is the CPU time (user + system) this process has used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// printTiming writes --timing's line: the wall and CPU time of the run and
// the packets (RoCEv2; FPDUs over iWARP) sent and received by both NICs per
// CPU-second. It is the one line of the output that differs between runs of
// a seed, hence behind a flag.
func (c simClock) printTiming(w io.Writer, res *sim.Result) {
	wall, cpu := time.Since(c.wall), processCPU()-c.cpu
	var pkts uint64
	for _, ctr := range append(res.CountersA[:len(res.CountersA):len(res.CountersA)], res.CountersB...) {
		switch ctr.Name {
		case "sent_pkts", "rcvd_pkts", "sent_fpdus", "rcvd_fpdus":
			pkts += ctr.Value
		}
	}
	rate := 0.0
	if cpu > 0 {
		rate = float64(pkts) / cpu.Seconds()
	}
	fmt.Fprintf(w, "timing: wall=%v cpu=%v packets=%d packets_per_cpu_second=%.0f\n",
		wall.Round(time.Microsecond), cpu.Round(time.Microsecond), pkts, rate)
}
