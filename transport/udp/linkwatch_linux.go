// The kernel interface under an embedded NIC's address: its link state,
// which the NIC's port follows as rxe's port follows its net device (the
// interface that carries the address goes down: the port goes DOWN).

package udp

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
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
	updates := make(chan netlink.LinkUpdate, 16)
	done, finished := make(chan struct{}), make(chan struct{})
	if err := netlink.LinkSubscribe(updates, done); err != nil {
		return nil, fmt.Errorf("udp: watch %s's link: %w", ifi.Name, err)
	}
	changed(ifi.Flags&net.FlagUp != 0 && ifi.Flags&net.FlagRunning != 0)
	go func() {
		defer close(finished)
		for u := range updates {
			if u.Attrs() != nil && u.Attrs().Index == ifi.Index {
				changed(u.Flags&unix.IFF_UP != 0 && u.Flags&unix.IFF_RUNNING != 0)
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}, nil
}

// interfaceCarrying finds the interface that carries addr: one with addr itself,
// else the one with the longest prefix holding it.
func interfaceCarrying(addr netip.Addr) (*net.Interface, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("udp: %w", err)
	}
	var best *net.Interface
	bestBits := -1
	for i := range ifs {
		as, err := ifs[i].Addrs()
		if err != nil {
			continue
		}
		for _, a := range as {
			p, err := netip.ParsePrefix(a.String())
			if err != nil || !p.Contains(addr.Unmap()) && !p.Contains(addr) {
				continue
			}
			if p.Addr() == addr || p.Addr() == addr.Unmap() {
				return &ifs[i], nil
			}
			if p.Bits() > bestBits {
				best, bestBits = &ifs[i], p.Bits()
			}
		}
	}
	if best == nil {
		return nil, fmt.Errorf("udp: no interface carries %v", addr)
	}
	return best, nil
}
