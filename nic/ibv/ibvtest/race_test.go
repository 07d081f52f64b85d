//go:build race

package ibvtest_test

const raceEnabled = true
