// Package loopback holds the address convention the tools (perf,
// pingpong) share when no address is given: the server takes Server, a
// client of a loopback server the other one, so both ends run on one host
// without configuration (all of 127.0.0.0/8 is local on Linux).
package loopback

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
)

// The two NICs' addresses when none are given.
var (
	Server = netip.MustParseAddr("127.0.0.2")
	Client = netip.MustParseAddr("127.0.0.3")
)

// ErrOneAddress says the server is on IPv6 loopback, which has one address
// and so leaves none for the client: the user must give one.
var ErrOneAddress = errors.New("IPv6 loopback, which has one address: give --addr")

// Other is the client's loopback address given the server's.
func Other(server netip.Addr) netip.Addr {
	if server == Client {
		return Server
	}
	return Client
}

// ClientAddr picks a client's own address for a server at server: the
// other loopback address for an IPv4 loopback server, else the address the
// host routes from toward server's port. The error is ErrOneAddress (with
// the server named) or the routing failure.
func ClientAddr(server netip.Addr, port uint16) (netip.Addr, error) {
	switch {
	case server.IsLoopback() && server.Is4():
		return Other(server), nil
	case server.IsLoopback():
		return netip.Addr{}, fmt.Errorf("server %v is %w", server, ErrOneAddress)
	}
	// A UDP "connection" picks the source address without sending anything.
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(server, port)))
	if err != nil {
		return netip.Addr{}, fmt.Errorf("no local address reaches %v: %w", server, err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).AddrPort().Addr().Unmap(), nil
}
