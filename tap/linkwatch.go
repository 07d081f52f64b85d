// The TAP's link state as the kernel sees it: up while the interface is
// administratively up and running (its carrier on, as a TAP with an
// attached file has), which a NIC's port follows (rxe's port follows its
// net device the same way).

package tap

import (
	"fmt"

	"github.com/vishvananda/netlink"

	"github.com/rnic/rnic/transport"
)

// WatchLink calls changed with the TAP's link state, up or not, each time
// the kernel reports the interface changed (ip link set ... down/up), from
// a goroutine of its own; a report that changes nothing is passed on too.
// stop ends the watch and returns once changed is no longer called.
func (d *Device) WatchLink(changed func(up bool)) (stop func(), err error) {
	ns, err := openNetns(d.netns)
	if err != nil {
		return nil, err
	}
	defer func() {
		if ns.IsOpen() {
			ns.Close()
		}
	}()
	stop, err = transport.WatchLink(netlink.LinkSubscribeOptions{Namespace: &ns},
		func(a *netlink.LinkAttrs) bool { return a.Name == d.name }, changed)
	if err != nil {
		return nil, fmt.Errorf("tap: %s: watch the link: %w", d.name, err)
	}
	return stop, nil
}
