//go:build race

// Whether the race detector is on: it slows the engines several times, so
// the long runs use smaller messages under it.

package perf

const raceEnabled = true
