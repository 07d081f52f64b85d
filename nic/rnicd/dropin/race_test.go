//go:build race

package dropin

// raceEnabled: this test binary runs under the race detector, which has
// nothing to watch here (the harness only starts processes and reads
// their output); make test runs the package without it too.
const raceEnabled = true
