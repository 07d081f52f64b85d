//go:build !race

package cdispec_test

const raceEnabled = false
