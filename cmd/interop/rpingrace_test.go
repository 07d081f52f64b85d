package main

import (
	"os"
	"strings"
	"testing"
)

// TestGuestRpingExitRace: the guest rping server's exit race (a capture
// of it from the lab) is recognised, and only it: a run short of its
// pings, another error, another exit code or another program is a failure.
func TestGuestRpingExitRace(t *testing.T) {
	race, err := os.ReadFile("testdata/rping-exit-race.out")
	if err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile("testdata/rping-good.out")
	if err != nil {
		t.Fatal(err)
	}
	cmd := "rping -s -a 10.77.0.24 -v -C 10"
	out := string(race)
	if !guestRpingExitRace(cmd, 255, out) {
		t.Error("the lab's exit race not recognised")
	}
	for _, c := range []struct {
		name, cmd string
		rc        int
		out       string
	}{
		{"a good run", cmd, 0, string(good)},
		{"exit 1", cmd, 1, out},
		{"a client", "rping -c -a 10.77.0.24 -v -C 10", 255, out},
		{"more pings asked", "rping -s -a 10.77.0.24 -v -C 11", 255, out},
		{"no count", "rping -s -a 10.77.0.24 -v", 255, out},
		{"a ping missing", cmd, 255, strings.Replace(out, "server ping data: rdma-ping-9", "", 1)},
		{"no disconnect", cmd, 255, strings.Replace(out, "server DISCONNECT EVENT...\n", "", 1)},
		{"another error", cmd, 255, out + "cq completion failed status 5\n"},
		{"another wait", cmd, 255, strings.Replace(out, "state 10", "state 11", 1)},
		{"not the race", cmd, 255, strings.Replace(out, rpingExitRace, "rdma_get_cm_event: Input/output error", 1)},
	} {
		if guestRpingExitRace(c.cmd, c.rc, c.out) {
			t.Errorf("%s: taken for the exit race", c.name)
		}
	}
}
