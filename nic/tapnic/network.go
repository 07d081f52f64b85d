package tapnic

import (
	"context"
	"net"
	"net/netip"

	"github.com/rnic/rnic/nic/ibv"
)

// Network returns the NIC's own TCP as an ibv.Network: the side channel of
// a tool or of rnicd on this NIC. The stack sends from the NIC's address of
// the peer's family (AddrFor), so Dial's local address (one of those, or
// none) changes nothing.
func (n *NIC) Network() ibv.Network { return sideChannel{n} }

// sideChannel adapts Dial's signature to ibv.Network's.
type sideChannel struct{ n *NIC }

func (s sideChannel) Listen(addr netip.AddrPort) (net.Listener, error) { return s.n.Listen(addr) }

func (s sideChannel) Dial(ctx context.Context, _ netip.Addr, remote netip.AddrPort) (net.Conn, error) {
	return s.n.Dial(ctx, remote)
}
