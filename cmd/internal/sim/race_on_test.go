//go:build race

package sim

// raceEnabled scales the long end-to-end run down under the race
// detector, which makes it about ten times slower.
const raceEnabled = true
