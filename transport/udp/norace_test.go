//go:build !race

// Whether the race detector is on (see race_test.go).

package udp

const raceEnabled = false
