// The kernel's TCP as the ibv.Network of a NIC that lives on kernel
// sockets (the embedded mode's UDP NICs): the NIC's addresses are the
// host's, so its side channels are the host's TCP, bound to them.

package server

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"

	"github.com/rnic/rnic/nic/ibv"
)

// KernelNetwork returns kernel TCP on addrs (the NIC's addresses) as an
// ibv.Network: Listen on an unspecified address listens on the NIC's
// address of its family, Dial from an invalid or unspecified local
// address binds the NIC's address of the remote's family.
func KernelNetwork(addrs ...netip.Addr) ibv.Network {
	k := kernelNet{}
	for _, a := range addrs {
		k.addrs = append(k.addrs, a.Unmap())
	}
	return k
}

type kernelNet struct{ addrs []netip.Addr }

// own returns a, or the NIC's address of a's family if a is unspecified
// (the first address if a is invalid).
func (k kernelNet) own(a netip.Addr, family netip.Addr) netip.Addr {
	a = a.Unmap()
	if a.IsValid() && !a.IsUnspecified() {
		return a
	}
	family = family.Unmap()
	for _, o := range k.addrs {
		if !family.IsValid() || o.Is4() == family.Is4() {
			return o
		}
	}
	return a
}

func (k kernelNet) Listen(addr netip.AddrPort) (net.Listener, error) {
	a := k.own(addr.Addr(), addr.Addr())
	if a.IsValid() && !a.IsUnspecified() && len(k.addrs) > 0 && !slices.Contains(k.addrs, a) {
		return nil, fmt.Errorf("rnicd: listen on %v: not an address of the NIC", a)
	}
	l, err := net.ListenTCP("tcp", net.TCPAddrFromAddrPort(netip.AddrPortFrom(a, addr.Port())))
	if err != nil {
		return nil, fmt.Errorf("rnicd: listen: %w", err)
	}
	return l, nil
}

func (k kernelNet) Dial(ctx context.Context, local netip.Addr, remote netip.AddrPort) (net.Conn, error) {
	var d net.Dialer
	if a := k.own(local, remote.Addr()); a.IsValid() && !a.IsUnspecified() {
		d.LocalAddr = &net.TCPAddr{IP: a.AsSlice()}
	}
	c, err := d.DialContext(ctx, "tcp", netip.AddrPortFrom(remote.Addr().Unmap(), remote.Port()).String())
	if err != nil {
		return nil, fmt.Errorf("rnicd: dial %v: %w", remote, err)
	}
	return c, nil
}
