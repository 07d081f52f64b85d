//go:build !race

package dropin

const raceEnabled = false
