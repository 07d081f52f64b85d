// The figures, computed as perftest computes them (print_report_bw,
// print_report_lat): MB means 2^20 bytes (perftest's format_factor for
// MB/sec is 0x100000, which the captured rxe logs confirm: 0.002036 Mpps ×
// 4096 B = 7.95 × 2^20 B/s), the message rate is in millions per second,
// and a latency sample is the time between consecutive posts divided by
// the round-trip factor.

package perf

import (
	"math"
	"slices"
)

// mb is perftest's megabyte.
const mb = 1 << 20

// BWStats are a bandwidth test's figures.
type BWStats struct {
	// PeakMBps is the best rate over any run of consecutive operations
	// (perftest's BW peak), AvgMBps the rate from the first post to the
	// last completion.
	PeakMBps    float64 `json:"bw_peak_mbps"`
	AvgMBps     float64 `json:"bw_avg_mbps"`
	MsgRateMpps float64 `json:"msg_rate_mpps"`
	Ops         int64   `json:"ops"`
	Bytes       int64   `json:"bytes"`
	Seconds     float64 `json:"seconds"`
	// QPsDone is how many QPs completed every one of their operations
	// (the client's count; all of them in a run that succeeds).
	QPsDone int `json:"qps_done"`
}

// bwStats computes the figures from the post and completion times (ns from
// the start; both in operation order) of ops of size bytes. cqMod is the
// completion granularity: completion times only change every cqMod
// operations, so only those ends are worth trying for the peak.
func bwStats(size int, posted, completed []int64, cqMod int) BWStats {
	n := len(completed)
	s := BWStats{Ops: int64(n), Bytes: int64(n) * int64(size)}
	if n == 0 {
		return s
	}
	span := float64(completed[n-1]-posted[0]) / 1e9
	if span <= 0 {
		span = 1e-9
	}
	s.Seconds = span
	s.AvgMBps = float64(s.Bytes) / mb / span
	s.MsgRateMpps = float64(n) / span / 1e6
	// Peak: the smallest average time per operation over operations
	// i..j, (completed[j] − posted[i]) / (j − i + 1). perftest tries every
	// pair (with j stepping by the CQ moderation); that is quadratic, so
	// long runs step i and j by n/1000 too, which finds the peak of runs
	// of at least that length.
	step := max(1, n/1000)
	jstep := max(cqMod, step)
	best := math.Inf(1)
	for i := 0; i < n; i += step {
		first := ((i+1+jstep-1)/jstep)*jstep - 1 // the first end at or after i on the step grid
		for j := max(first, i); j < n; j += jstep {
			if t := float64(completed[j]-posted[i]) / float64(j-i+1); t < best {
				best = t
			}
		}
		if t := float64(completed[n-1]-posted[i]) / float64(n-i); t < best {
			best = t // the last operation always completes
		}
	}
	if best > 0 && !math.IsInf(best, 1) {
		s.PeakMBps = float64(size) / mb / (best / 1e9)
	} else {
		s.PeakMBps = s.AvgMBps
	}
	return s
}

// LatStats are a latency test's figures, in microseconds.
type LatStats struct {
	Samples int     `json:"samples"`
	Min     float64 `json:"t_min_usec"`
	Max     float64 `json:"t_max_usec"`
	Typical float64 `json:"t_typical_usec"` // the median
	Avg     float64 `json:"t_avg_usec"`
	Stdev   float64 `json:"t_stdev_usec"`
	P99     float64 `json:"t_99_usec"`
	P999    float64 `json:"t_99_9_usec"`
}

// latStats computes the figures from samples in ns, each divided by rtt.
// The median of an even number of samples is the mean of the middle two,
// as perftest's get_median; the percentiles are nearest-rank (the smallest
// sample not exceeded by that share of samples), which for perftest's
// usual sample counts is the same element perftest prints.
func latStats(samples []int64, rtt float64) LatStats {
	n := len(samples)
	s := LatStats{Samples: n}
	if n == 0 {
		return s
	}
	us := make([]float64, n)
	for i, v := range samples {
		us[i] = float64(v) / 1e3 / rtt
	}
	slices.Sort(us)
	s.Min, s.Max = us[0], us[n-1]
	if n%2 == 0 {
		s.Typical = (us[n/2-1] + us[n/2]) / 2
	} else {
		s.Typical = us[n/2]
	}
	var sum float64
	for _, v := range us {
		sum += v
	}
	s.Avg = sum / float64(n)
	var sq float64
	for _, v := range us {
		sq += (v - s.Avg) * (v - s.Avg)
	}
	s.Stdev = math.Sqrt(sq / float64(n))
	rank := func(p float64) float64 {
		k := int(math.Ceil(p*float64(n))) - 1
		return us[min(max(k, 0), n-1)]
	}
	s.P99, s.P999 = rank(0.99), rank(0.999)
	return s
}
