// The view's network namespace: lo up, and one TAP per NIC, named after
// it, carrying its addresses and up. The holder keeps each TAP open, so
// it has carrier; closing it (the holder's exit) removes it.

package view

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// iface is a TAP of the view.
type iface struct {
	name   string
	file   *os.File
	bridge io.Closer // AttachHostPort's, or nil
}

func (i *iface) Close() error {
	var err error
	if i.bridge != nil {
		err = i.bridge.Close()
	}
	return errors.Join(err, i.file.Close())
}

// makeInterfaces brings lo up and makes each device's TAP; it returns
// the interface name of each device and what to close at the end.
func makeInterfaces(p *Plan, devs []Device) (map[string]string, []io.Closer, error) {
	lo, err := netlink.LinkByName("lo")
	if err == nil {
		err = netlink.LinkSetUp(lo)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("view: lo up: %w", err)
	}
	names := map[string]string{}
	var closers []io.Closer
	taken := map[string]bool{"lo": true}
	for _, d := range devs {
		name := ifName(d, taken)
		taken[name] = true
		i, err := makeTAP(p, &d, name)
		if err != nil {
			for _, c := range closers {
				c.Close()
			}
			return nil, nil, err
		}
		names[d.Name], closers = name, append(closers, i)
	}
	return names, closers, nil
}

// ifName is the device's name when it is a good interface name, else
// rnicvN.
func ifName(d Device, taken map[string]bool) string {
	n := d.Name
	ok := len(n) > 0 && len(n) < unix.IFNAMSIZ && !taken[n]
	for _, c := range n {
		if c <= ' ' || c == '/' || c == ':' || c > 0x7e {
			ok = false
		}
	}
	if ok {
		return n
	}
	return fmt.Sprintf("rnicv%d", d.Index)
}

// makeTAP creates the TAP name for d, offers it to the daemon
// (AttachHostPort), gives it d's addresses and MTU and brings it up.
func makeTAP(p *Plan, d *Device, name string) (*iface, error) {
	f, err := openTAP(name)
	if err != nil {
		return nil, fmt.Errorf("view: TAP %s: %w", name, err)
	}
	i := &iface{name: name, file: f}
	fail := func(err error) (*iface, error) {
		i.Close()
		return nil, fmt.Errorf("view: TAP %s: %w", name, err)
	}
	link, err := netlink.LinkByName(name)
	if err != nil {
		return fail(err)
	}
	mac, closer, err := AttachHostPort(p.Socket, d.Name, f)
	switch {
	case err == nil:
		i.bridge = closer
		if err := netlink.LinkSetHardwareAddr(link, mac); err != nil {
			return fail(err)
		}
		// On the wire the NIC's on-link prefixes route its peers
		// through this interface; the stat reply has no prefixes.
		for _, pr := range hostPrefixes(closer) {
			if p.Bits == nil {
				p.Bits = map[netip.Addr]int{}
			}
			p.Bits[pr.Addr()] = pr.Bits()
		}
	case !errors.Is(err, ErrNotSupported):
		return fail(err)
	}
	if d.LinkMTU >= 68 && d.LinkMTU <= 65535 {
		if err := netlink.LinkSetMTU(link, d.LinkMTU); err != nil {
			return fail(err)
		}
	}
	for _, a := range d.Addrs() {
		if a.Is6() && a.IsLoopback() {
			continue // the kernel keeps ::1 to lo: EADDRNOTAVAIL elsewhere
		}
		bits, ok := p.Bits[a]
		if !ok {
			bits = defaultBits(a)
		}
		if err := addAddr(link, netip.PrefixFrom(a, bits)); err != nil {
			return fail(err)
		}
	}
	if err := netlink.LinkSetUp(link); err != nil {
		return fail(err)
	}
	return i, nil
}

// addAddr adds one address; IPv6 without duplicate address detection,
// so it is usable at once.
func addAddr(link netlink.Link, pfx netip.Prefix) error {
	a := &netlink.Addr{IPNet: &net.IPNet{IP: pfx.Addr().AsSlice(), Mask: net.CIDRMask(pfx.Bits(), pfx.Addr().BitLen())}}
	if pfx.Addr().Is6() {
		a.Flags = unix.IFA_F_NODAD
	}
	if err := netlink.AddrAdd(link, a); err != nil {
		return fmt.Errorf("address %s: %w", pfx, err)
	}
	return nil
}

// openTAP creates the TAP name (IFF_TAP|IFF_NO_PI, with a virtio-net
// header: bridged by rnicd, it then moves TCP super-segments, ~7 times
// the plain rate) and returns its file.
func openTAP(name string) (*os.File, error) {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	ifr, err := unix.NewIfreq(name)
	if err == nil {
		ifr.SetUint16(unix.IFF_TAP | unix.IFF_NO_PI | unix.IFF_VNET_HDR)
		err = unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr)
	}
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("TUNSETIFF: %w", err)
	}
	return os.NewFile(uintptr(fd), "/dev/net/tun"), nil
}
