// The kernel interface under an embedded NIC's address: its link state,
// which the NIC's port follows as rxe's port follows its net device (the
// interface that carries the address goes down: the port goes DOWN).

package udp

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"

	"github.com/rnic/rnic/transport"
)

// WatchAddrLink calls changed with the link state, up or not, of the
// interface whose addresses or prefixes hold addr (lo for 127.0.0.2): once
// at once, then each time the kernel reports the interface changed, from
// a goroutine of its own. Subscribing to link reports needs no privilege.
// stop ends the watch and returns once changed is no longer called.
func WatchAddrLink(addr netip.Addr, changed func(up bool)) (stop func(), err error) {
	ifi, err := interfaceCarrying(addr)
	if err != nil {
		return nil, err
	}
	stop, err = transport.WatchLink(netlink.LinkSubscribeOptions{},
		func(a *netlink.LinkAttrs) bool { return a.Index == ifi.Index }, changed)
	if err != nil {
		return nil, fmt.Errorf("udp: watch %s's link: %w", ifi.Name, err)
	}
	changed(ifi.Flags&net.FlagUp != 0 && ifi.Flags&net.FlagRunning != 0)
	return stop, nil
}

// interfaceCarrying finds the interface that carries addr: one with addr
// itself, else the one with the longest prefix holding it.
func interfaceCarrying(addr netip.Addr) (*net.Interface, error) {
	has, holds, err := interfacesWith(addr)
	switch {
	case err != nil:
		return nil, fmt.Errorf("udp: %w", err)
	case has != nil:
		return has, nil
	case holds != nil:
		return holds, nil
	}
	return nil, fmt.Errorf("udp: no interface carries %v", addr)
}

// interfacesWith returns the interface that has addr among its addresses
// (has), and the one whose prefix holding addr is the longest (holds);
// either is nil when there is none.
func interfacesWith(addr netip.Addr) (has, holds *net.Interface, err error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, nil, err
	}
	addr = addr.Unmap()
	bits := -1
	for i := range ifs {
		as, err := ifs[i].Addrs()
		if err != nil {
			continue
		}
		for _, a := range as {
			n, ok := a.(*net.IPNet)
			if !ok {
				continue
			}
			ip, ok := netip.AddrFromSlice(n.IP)
			ones, _ := n.Mask.Size()
			if !ok {
				continue
			}
			p := netip.PrefixFrom(ip.Unmap(), ones)
			if p.Addr() == addr {
				return &ifs[i], &ifs[i], nil
			}
			if p.Contains(addr) && ones > bits {
				holds, bits = &ifs[i], ones
			}
		}
	}
	return nil, holds, nil
}
