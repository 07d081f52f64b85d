//go:build race

// Whether the race detector is on: it makes sync.Pool drop items at
// random, so allocation counts mean nothing under it.

package udp

const raceEnabled = true
