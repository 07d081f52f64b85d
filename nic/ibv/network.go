// Side-channel networks: the host kernel's TCP as a Network, and the rule
// tools use to pick the network of a device (its own if it has one) and to
// decide whether a failed dial is worth repeating.

package ibv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
)

// KernelNetwork is the host kernel's TCP: the network of an embedded NIC
// (whose addresses are the host's) and of a hardware NIC.
type KernelNetwork struct{}

// Listen listens on addr; an invalid address listens on every address of
// the host.
func (KernelNetwork) Listen(addr netip.AddrPort) (net.Listener, error) {
	if !addr.Addr().IsValid() {
		return net.Listen("tcp", fmt.Sprintf(":%d", addr.Port()))
	}
	return net.Listen("tcp", addr.String())
}

// Dial binds the connection's local end to local (when valid), so the
// peer sees the address the NIC sends from: tools that learn a peer's GID
// from the side channel's address depend on it.
func (KernelNetwork) Dial(ctx context.Context, local netip.Addr, remote netip.AddrPort) (net.Conn, error) {
	var d net.Dialer
	if local.IsValid() {
		d.LocalAddr = &net.TCPAddr{IP: local.AsSlice()}
	}
	return d.DialContext(ctx, "tcp", remote.String())
}

// NetworkOf returns dev's own network (ibv.Network) if it has one, else
// the kernel's.
func NetworkOf(dev Device) Network {
	if n, ok := dev.(Network); ok {
		return n
	}
	return KernelNetwork{}
}

// DialRetryable reports whether a failed dial through n may succeed if
// repeated (the server may not be listening yet). Kernel TCP: exactly a
// refused connection. A device's own TCP reports refusal in its own
// words, and its first attempt may fail while the peer's port comes up
// and answers ARP/ND, so anything but a cancelled or expired context;
// callers bound the attempts.
func DialRetryable(n Network, err error) bool {
	if _, ok := n.(KernelNetwork); ok {
		return errors.Is(err, syscall.ECONNREFUSED)
	}
	return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}
