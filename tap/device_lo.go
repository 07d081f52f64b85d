// The namespace's loopback: a TAP's namespace whose lo is down (a fresh
// `ip netns add` leaves it down) cannot reach its own addresses, the
// bridge's among them: Linux delivers local traffic through lo, and drops
// it when lo is down. A program there that serves TCP on the bridge's
// address then never hears a client of the same namespace, whose connect
// hangs; ibv_rc_pingpong's exchange did, its server's QP left in INIT.
// The Device notices, so that the daemon can say so.

package tap

import (
	"net"

	"github.com/vishvananda/netlink"
)

// loopbackDown reports whether the namespace of h has a loopback device
// that is down.
func loopbackDown(h *netlink.Handle) bool {
	lo, err := h.LinkByName("lo")
	return err == nil && lo.Attrs().Flags&net.FlagUp == 0
}

// LoopbackDown reports whether the TAP's namespace had its lo down when
// the Device was opened (only checked in a namespace of DeviceConfig's):
// its own addresses were then unreachable from inside it.
func (d *Device) LoopbackDown() bool { return d.loDown }
