package nic

import (
	"testing"

	"github.com/rnic/rnic/nic/verbs"
)

// TestPortActiveEvent: the port follows its link (SetPortActive): DOWN
// with physical state Disabled and IBV_EVENT_PORT_ERR when it goes down,
// ACTIVE and IBV_EVENT_PORT_ACTIVE when it comes back; a call that
// changes nothing raises nothing.
func TestPortActiveEvent(t *testing.T) {
	f := newFixture(t)
	want := func(state verbs.PortState, phys uint8) {
		t.Helper()
		a, err := f.d.QueryPort(1)
		if err != nil || a.State != state || a.PhysState != phys {
			t.Fatalf("QueryPort: state %v, phys_state %d, %v; want %v, %d", a.State, a.PhysState, err, state, phys)
		}
	}
	want(verbs.PortActive, verbs.PhysStateLinkUp)
	f.d.SetPortActive(true)
	noEvent(t, f.d)
	f.d.SetPortActive(false)
	want(verbs.PortDown, verbs.PhysStateDisabled)
	if e := nextEvent(t, f.d); e.Type != verbs.EventPortErr || e.Port != 1 || e.QP != nil {
		t.Fatalf("link down: event %+v, want PORT_ERR on port 1", e)
	}
	f.d.SetPortActive(false)
	noEvent(t, f.d)
	f.d.SetPortActive(true)
	want(verbs.PortActive, verbs.PhysStateLinkUp)
	if e := nextEvent(t, f.d); e.Type != verbs.EventPortActive || e.Port != 1 {
		t.Fatalf("link up: event %+v, want PORT_ACTIVE on port 1", e)
	}
	noEvent(t, f.d)
}
