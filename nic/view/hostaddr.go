// The host's own interfaces: a NIC whose addresses an interface of the
// host already carries (not lo) needs no network namespace, and an
// address's prefix is the one the host gives it.

package view

import (
	"net"
	"net/netip"
)

// hostAddr is an address of a host interface.
type hostAddr struct {
	ifname string
	bits   int
	usable bool // up and not loopback: what libfabric's vrb_getifaddrs keeps
}

// hostAddrs lists the host's interface addresses.
func hostAddrs() map[netip.Addr]hostAddr {
	out := map[netip.Addr]hostAddr{}
	ifs, err := net.Interfaces()
	if err != nil {
		return out
	}
	for _, ifc := range ifs {
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		usable := ifc.Flags&net.FlagUp != 0 && ifc.Flags&net.FlagLoopback == 0 && ifc.Name != "lo"
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok {
				continue
			}
			ip, ok := netip.AddrFromSlice(ipn.IP)
			if !ok {
				continue
			}
			bits, _ := ipn.Mask.Size()
			out[ip.Unmap()] = hostAddr{ifname: ifc.Name, bits: bits, usable: usable}
		}
	}
	return out
}

// Plan is what the launcher, in the host's namespaces, decides for the
// holder: a network namespace or the host's interfaces, and the prefix
// of each address.
type Plan struct {
	Socket string
	// Netns: the view has a network namespace of its own with one TAP
	// per NIC; otherwise HostIf names each NIC's host interface.
	Netns  bool
	HostIf map[string]string  // device name → host interface
	Bits   map[netip.Addr]int // address → prefix length
	// Pin is the daemon's socket as checked from the host (a user other
	// than root: pin.go).
	Pin *Pin `json:",omitempty"`
}

// plan decides for devs (names and GIDs) given the host's addresses.
func plan(socket string, devs []Device, host map[netip.Addr]hostAddr) *Plan {
	p := &Plan{Socket: socket, HostIf: map[string]string{}, Bits: map[netip.Addr]int{}}
	for _, d := range devs {
		for _, a := range d.Addrs() {
			h, ok := host[a]
			p.Bits[a] = defaultBits(a)
			if ok && !a.IsLoopback() {
				p.Bits[a] = h.bits
			}
			if !ok || !h.usable {
				p.Netns = true
				continue
			}
			if p.HostIf[d.Name] == "" {
				p.HostIf[d.Name] = h.ifname
			}
		}
	}
	if p.Netns {
		p.HostIf = nil
	}
	return p
}

// defaultBits is the prefix of an address no host interface carries:
// 127/8 as lo has it, else the address alone.
func defaultBits(a netip.Addr) int {
	switch {
	case a.Is4() && a.IsLoopback():
		return 8
	case a.Is4():
		return 32
	}
	return 128
}
