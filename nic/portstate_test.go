package nic

import "testing"

func TestPortStateString(t *testing.T) {
	for s, want := range map[PortState]string{PortDown: "DOWN", PortInit: "INIT", PortArmed: "ARMED", PortActive: "ACTIVE", 9: "UNKNOWN(9)"} {
		if got := s.String(); got != want {
			t.Errorf("PortState(%d).String() = %q, want %q", uint8(s), got, want)
		}
	}
}
