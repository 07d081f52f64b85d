package nic

import (
	"testing"

	"github.com/rnic/rnic/nic/verbs"
)

func TestPortStateString(t *testing.T) {
	for s, want := range map[verbs.PortState]string{verbs.PortDown: "DOWN", verbs.PortInit: "INIT", verbs.PortArmed: "ARMED", verbs.PortActive: "ACTIVE", 9: "UNKNOWN(9)"} {
		if got := s.String(); got != want {
			t.Errorf("PortState(%d).String() = %q, want %q", uint8(s), got, want)
		}
	}
}
