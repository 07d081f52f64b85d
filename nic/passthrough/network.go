//go:build verbs

// ibv.Network for a libibverbs device: its addresses belong to the host
// kernel, so side channels use the kernel's TCP.

package passthrough

import (
	"context"
	"fmt"
	"net"
	"net/netip"
)

func (d *device) Listen(addr netip.AddrPort) (net.Listener, error) {
	l, err := net.ListenTCP("tcp", net.TCPAddrFromAddrPort(netip.AddrPortFrom(addr.Addr().Unmap(), addr.Port())))
	if err != nil {
		return nil, fmt.Errorf("passthrough: listen on %v: %w", addr, err)
	}
	return l, nil
}

func (d *device) Dial(ctx context.Context, local netip.Addr, remote netip.AddrPort) (net.Conn, error) {
	var dl net.Dialer
	if local.IsValid() && !local.IsUnspecified() {
		dl.LocalAddr = &net.TCPAddr{IP: local.Unmap().AsSlice()}
	}
	c, err := dl.DialContext(ctx, "tcp", netip.AddrPortFrom(remote.Addr().Unmap(), remote.Port()).String())
	if err != nil {
		return nil, fmt.Errorf("passthrough: dial %v: %w", remote, err)
	}
	return c, nil
}
