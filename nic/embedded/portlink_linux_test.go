package embedded_test

import (
	"net/netip"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/verbs"
)

// TestPortFollowsLink: a UDP-mode NIC opened with FollowLink claims
// PORT_ACTIVE_EVENT, and its port follows the kernel interface that
// carries its address, as rxe's follows its net device: down gives
// IBV_EVENT_PORT_ERR and a DOWN port, up IBV_EVENT_PORT_ACTIVE and ACTIVE.
// The interface is a veth in a network namespace of the test's own.
func TestPortFollowsLink(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: a network namespace and an interface to take down")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	ns, err := netns.New() // and this thread is in it
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		netns.Set(orig)
		ns.Close()
	}()
	// a veth pair (no dummy module here), both ends up: the address's end
	// runs while its peer is up
	link := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "rnic-v0"}, PeerName: "rnic-v1"}
	if err := netlink.LinkAdd(link); err != nil {
		t.Fatal(err)
	}
	peer, err := netlink.LinkByName("rnic-v1")
	if err != nil {
		t.Fatal(err)
	}
	if err := netlink.LinkSetUp(peer); err != nil {
		t.Fatal(err)
	}
	addr, _ := netlink.ParseAddr("10.99.0.2/24")
	if err := netlink.AddrAdd(link, addr); err != nil {
		t.Fatal(err)
	}
	if err := netlink.LinkSetUp(link); err != nil {
		t.Fatal(err)
	}
	n, err := embedded.Open(embedded.UDPConfig{Addr: netip.MustParseAddr("10.99.0.2"), FollowLink: true})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if n.Query().DeviceCapFlags&verbs.DevicePortActiveEvent == 0 {
		t.Error("a NIC that follows its link does not claim PORT_ACTIVE_EVENT")
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
	// the veth's carrier may come a moment after it is set up: the port
	// is ACTIVE once it has
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if a, err := n.QueryPort(1); err == nil && a.State == verbs.PortActive {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("QueryPort: %v, %v; want ACTIVE", a.State, err)
		}
	}
	for len(n.Events()) > 0 {
		<-n.Events()
	}
	if err := netlink.LinkSetDown(link); err != nil {
		t.Fatal(err)
	}
	event(verbs.EventPortErr)
	state(verbs.PortDown)
	if err := netlink.LinkSetUp(link); err != nil {
		t.Fatal(err)
	}
	event(verbs.EventPortActive)
	state(verbs.PortActive)
}
