package perf

import (
	"math"
	"testing"
)

const sec = int64(1e9)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestBWStats(t *testing.T) {
	// Four 1 MiB operations posted at once, completing at 4, 5, 6 and 7 s:
	// 4 MiB in 7 s on average; the best run is all four, 7 s / 4 each.
	s := bwStats(mb, []int64{0, 0, 0, 0}, []int64{4 * sec, 5 * sec, 6 * sec, 7 * sec}, 1)
	if !near(s.AvgMBps, 4.0/7) || !near(s.PeakMBps, 1/1.75) || !near(s.MsgRateMpps, 4.0/7/1e6) || s.Ops != 4 || s.Bytes != 4*mb {
		t.Errorf("%+v", s)
	}
	// A fast middle stretch is the peak: operations 1..2 take 1 s each.
	s = bwStats(mb, []int64{0, 10 * sec, 10 * sec, 12 * sec}, []int64{10 * sec, 11 * sec, 12 * sec, 20 * sec}, 1)
	if !near(s.PeakMBps, 1) || !near(s.AvgMBps, 4.0/20) {
		t.Errorf("%+v", s)
	}
}

func TestLatStats(t *testing.T) {
	s := latStats([]int64{4000, 1000, 3000, 2000}, 1)
	want := LatStats{Samples: 4, Min: 1, Max: 4, Typical: 2.5, Avg: 2.5, Stdev: math.Sqrt(1.25), P99: 4, P999: 4}
	if s != want {
		t.Errorf("got %+v, want %+v", s, want)
	}
	// Ping-pongs report half the round trip; an odd count's median is the
	// middle sample.
	s = latStats([]int64{2000, 6000, 4000}, 2)
	if s.Typical != 2 || s.Min != 1 || s.Max != 3 {
		t.Errorf("%+v", s)
	}
	// Nearest rank: the 99th percentile of 1000 samples is the 990th.
	samples := make([]int64, 1000)
	for i := range samples {
		samples[i] = int64(i+1) * 1000
	}
	if s := latStats(samples, 1); s.P99 != 990 || s.P999 != 999 || s.Typical != 500.5 {
		t.Errorf("%+v", s)
	}
}

// TestRowsGolden formats the figures of the captured rxe runs
// (testdata/captures/logs/rxe-write-bw-4096.log, rxe-write-lat-64.log)
// exactly as perftest printed them.
func TestRowsGolden(t *testing.T) {
	bw := bwRow(4096, 20, &BWStats{PeakMBps: 9.18, AvgMBps: 7.95, MsgRateMpps: 0.002036})
	if want := " 4096       20               9.18               7.95   \t\t   0.002036\n"; bw != want {
		t.Errorf("bw row\n%q\nwant\n%q", bw, want)
	}
	lat := latRow(64, 100, &LatStats{Min: 181.10, Max: 2403.95, Typical: 286.42, Avg: 422.15, Stdev: 390.71, P99: 2403.95, P999: 2403.95})
	if want := " 64      100          181.10         2403.95      286.42   \t       422.15      \t390.71 \t\t2403.95 \t\t2403.95\n"; lat != want {
		t.Errorf("lat row\n%q\nwant\n%q", lat, want)
	}
}
