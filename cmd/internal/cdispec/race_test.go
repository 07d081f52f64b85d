//go:build race

package cdispec_test

// raceEnabled: make test runs every package a second time under -race;
// the container tests drive C programs in podman and ran the first time.
const raceEnabled = true
