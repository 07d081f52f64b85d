package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// TestPinBridgeMAC: a bridge whose address was never set takes the lowest
// of its ports' MACs (so it changed with every row's TAP); once pinned it
// keeps its MAC when a port with a lower one joins. The first half checks
// the kernel behaviour the pin is there for, in a namespace of its own.
func TestPinBridgeMAC(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: a network namespace with a bridge")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("no ip(8): iproute2 is not installed")
	}
	ctx := context.Background()
	ns := fmt.Sprintf("rnic-pin-%d", os.Getpid())
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", append([]string{"-n", ns}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	addPort := func(name, mac string) {
		ip("tuntap", "add", "dev", name, "mode", "tap")
		ip("link", "set", name, "address", mac)
		ip("link", "set", name, "master", "br0")
	}
	ip("link", "add", "br0", "type", "bridge")
	addPort("p1", "02:00:00:00:00:50")
	before, err := linkMAC(ctx, ns, "br0")
	if err != nil {
		t.Fatal(err)
	}
	addPort("p2", "02:00:00:00:00:10")
	if unpinned, _ := linkMAC(ctx, ns, "br0"); unpinned == before {
		t.Fatalf("an unpinned bridge kept %s when a lower port joined: the kernel no longer needs the pin", before)
	}
	if err := pinBridgeMAC(ctx, ns, "br0"); err != nil {
		t.Fatal(err)
	}
	pinned, _ := linkMAC(ctx, ns, "br0")
	addPort("p3", "02:00:00:00:00:01")
	ip("link", "del", "p2")
	if after, _ := linkMAC(ctx, ns, "br0"); after != pinned {
		t.Errorf("pinned bridge changed its MAC from %s to %s", pinned, after)
	}
}
