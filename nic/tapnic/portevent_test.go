package tapnic_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/rnic/rnic/nic/tapnic"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/tap/taptest"
)

// TestPortFollowsTAP: the NIC's port follows its TAP as rxe's follows its
// net device: ip link set TAP down makes it DOWN with IBV_EVENT_PORT_ERR,
// up again ACTIVE with IBV_EVENT_PORT_ACTIVE, and the device claims
// PORT_ACTIVE_EVENT.
func TestPortFollowsTAP(t *testing.T) {
	tn := taptest.New(t, 58)
	n, err := tapnic.Open(tapnic.Config{TAP: "t-port", Netns: tn.Name, Bridge: tn.Bridge,
		Prefixes: []netip.Prefix{tn.Addr4(2)}})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if n.Query().DeviceCapFlags&verbs.DevicePortActiveEvent == 0 {
		t.Error("a TAP NIC does not claim PORT_ACTIVE_EVENT")
	}
	event := func(want verbs.AsyncEvent) {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case e := <-n.Events():
				if e.Type == want && e.Port == 1 {
					return
				}
				t.Logf("event %v on port %d, waiting for %v", e.Type, e.Port, want)
			case <-timeout:
				t.Fatalf("no %v event", want)
			}
		}
	}
	state := func(want verbs.PortState) {
		t.Helper()
		if a, err := n.QueryPort(1); err != nil || a.State != want {
			t.Fatalf("QueryPort: %v, %v; want %v", a.State, err, want)
		}
	}
	state(verbs.PortActive)
	tn.IP(t, "link", "set", "t-port", "down")
	event(verbs.EventPortErr)
	state(verbs.PortDown)
	tn.IP(t, "link", "set", "t-port", "up")
	event(verbs.EventPortActive)
	state(verbs.PortActive)
}
