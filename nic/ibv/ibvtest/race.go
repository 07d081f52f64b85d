//go:build race

package ibvtest

// raceEnabled: built with the race detector, which slows everything ~10x.
const raceEnabled = true
