package tap

import "testing"

// TestLoopbackDown: a TAP opened in a namespace whose lo is down says so
// (rnicd warns: programs there cannot reach the namespace's own addresses,
// and ibv_rc_pingpong aimed at the bridge's address hangs); once lo is up
// it does not.
func TestLoopbackDown(t *testing.T) {
	ns := newTestNetns(t)
	ns.ip("link", "set", "lo", "down")
	d, err := OpenDevice(DeviceConfig{Name: "rtlo0", Netns: ns.name})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if !d.LoopbackDown() {
		t.Error("lo is down in the namespace, the Device says not")
	}
	ns.ip("link", "set", "lo", "up")
	d2, err := OpenDevice(DeviceConfig{Name: "rtlo1", Netns: ns.name})
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	if d2.LoopbackDown() {
		t.Error("lo is up in the namespace, the Device says down")
	}
}
