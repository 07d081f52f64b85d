// Addresses: resolving a server, choosing a side's own address among a
// NIC's, and the loopback convention that gives one host two sides.

package progkit

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"

	"github.com/rnic/rnic/cmd/internal/loopback"
	"github.com/rnic/rnic/nic/ibv"
)

// lookupNetIP is the resolver; tests replace it to return what a real one
// may (an IPv4-mapped address, IPv6 only).
var lookupNetIP = net.DefaultResolver.LookupNetIP

// Lookup resolves host to one address, IPv4 first (the RoCEv2 GID of an
// IPv4 address is what rc_pingpong and perftest users expect); with own
// set (a NIC that is not the host's: a TAP NIC, a device), the first
// address of a family the NIC has one of.
func (p Program) Lookup(ctx context.Context, host string, own []netip.Addr) (netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return a.Unmap(), nil
	}
	addrs, err := lookupNetIP(ctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		return netip.Addr{}, fmt.Errorf("%s: resolve %s: %w", p.Name, host, err)
	}
	if own != nil {
		for _, a := range addrs {
			if _, ok := AddrOfFamily(own, a); ok {
				return a.Unmap(), nil
			}
		}
	}
	for _, a := range addrs {
		if a.Unmap().Is4() {
			return a.Unmap(), nil
		}
	}
	return addrs[0].Unmap(), nil
}

// AddrOfFamily is the first of own of peer's family, or own's first for an
// invalid peer (a server).
func AddrOfFamily(own []netip.Addr, peer netip.Addr) (netip.Addr, bool) {
	for _, a := range own {
		if !peer.IsValid() || a.Unmap().Is4() == peer.Unmap().Is4() {
			return a.Unmap(), true
		}
	}
	return netip.Addr{}, false
}

// HasAddr says whether a is one of addrs, mapped or not.
func HasAddr(addrs []netip.Addr, a netip.Addr) bool {
	return slices.ContainsFunc(addrs, func(x netip.Addr) bool { return x.Unmap() == a.Unmap() })
}

// DeviceAddrs is the IP addresses in a device's GID table, in its order:
// the GIDs that name an address (IPv4 ones unmapped) and can carry a side
// channel (no link-local fe80:: GID, whose zone a GID does not say).
func DeviceAddrs(dev ibv.Device) []netip.Addr {
	var out []netip.Addr
	for _, g := range dev.GIDs() {
		a := g.Unmap()
		if a.IsValid() && !a.IsUnspecified() && !a.IsLinkLocalUnicast() && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// ChooseAddr picks a side's own address among own, the addresses of its
// NIC (what names the NIC in errors): addr, if valid, must be one of them
// and of server's family; zero takes the first of server's family (the
// first for a server, whose server is invalid).
func (p Program) ChooseAddr(own []netip.Addr, addr, server netip.Addr, what string) (netip.Addr, error) {
	if addr.IsValid() {
		addr = addr.Unmap()
		if !HasAddr(own, addr) {
			return netip.Addr{}, fmt.Errorf("%w: address %v is not one of %s's %v", p.ErrConfig, addr, what, own)
		}
		if server.IsValid() && server.Unmap().Is4() != addr.Is4() {
			return netip.Addr{}, fmt.Errorf("%w: address %v cannot reach server %v", p.ErrConfig, addr, server)
		}
		return addr, nil
	}
	a, ok := AddrOfFamily(own, server)
	if !ok {
		return netip.Addr{}, fmt.Errorf("%w: %s has no address of server %v's family (it has %v)", p.ErrConfig, what, server, own)
	}
	return a, nil
}

// ClientAddr is the loopback convention's address of an embedded-mode
// client of the server at server (loopback.ClientAddr): the other loopback
// address for a loopback server, else the one the host routes from toward
// rdmaPort.
func (p Program) ClientAddr(server netip.Addr, rdmaPort uint16) (netip.Addr, error) {
	a, err := loopback.ClientAddr(server, rdmaPort)
	switch {
	case errors.Is(err, loopback.ErrOneAddress):
		return a, fmt.Errorf("%w: %w", p.ErrConfig, err)
	case err != nil:
		return a, fmt.Errorf("%s: %w", p.Name, err)
	}
	return a.Unmap(), nil
}
