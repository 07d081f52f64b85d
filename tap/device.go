// TAP device: the NIC's port on a real Ethernet. A Linux TAP is created or
// attached with TUNSETIFF on /dev/net/tun (IFF_TAP|IFF_NO_PI, and with
// DeviceConfig.Offload IFF_VNET_HDR and the offloads: device_vnet.go; see
// the kernel's Documentation/networking/tuntap.rst) and configured with
// netlink (MTU, bridge, addresses, up), optionally inside an `ip netns`
// namespace.
//
//	  rnic process                      kernel (the TAP's namespace)
//	┌──────────────┐   /dev/net/tun   ┌──────────────────────────────┐
//	│ Device       │ ◄══ one frame ══►│ TAP NAME ── bridge / kernel  │
//	│ Read/Write   │   per read/write │  (the "kernel side")  stack  │
//	└──────────────┘                  └──────────────────────────────┘
//
// Frames written by the NIC come out of the TAP's kernel side as if
// received from a wire; frames the kernel side sends are read by the NIC.

package tap

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Limits of DeviceConfig.
const (
	// MaxDeviceNameLen is IFNAMSIZ-1: the kernel's name buffer keeps a NUL.
	MaxDeviceNameLen = unix.IFNAMSIZ - 1
	// MinDeviceMTU is the smallest MTU OpenDevice sets: the IPv4 minimum
	// datagram every host must accept (RFC 791).
	MinDeviceMTU = 576
	// MaxDeviceMTU is the largest MTU OpenDevice sets (a jumbo frame).
	MaxDeviceMTU = 9000
)

// DeviceConfig says which TAP to open and how to configure it.
type DeviceConfig struct {
	// Name is the TAP interface name: required, at most MaxDeviceNameLen
	// bytes. An existing TAP of that name is attached to; otherwise a new
	// one is created.
	Name string
	// Netns, if set, is the `ip netns` name (/run/netns/NAME) of the
	// network namespace the TAP lives in; a TAP OpenDevice creates is
	// created inside it.
	Netns string
	// Bridge, if set, is a bridge (in Netns) the TAP is enslaved to. It must
	// exist.
	Bridge string
	// MTU, if not 0, is set on the TAP (MinDeviceMTU..MaxDeviceMTU). With 0
	// an existing TAP keeps its MTU and a new one gets 1500.
	MTU int
	// Addrs are addresses for the kernel's side of the TAP, for a TAP
	// without a bridge where the host kernel is the NIC's peer. Usually
	// empty: the NIC's own addresses belong to the NIC, not to the kernel.
	Addrs []netip.Prefix
	// Offload opens the TAP with a virtio_net_hdr on every frame
	// (IFF_VNET_HDR) and offers the kernel checksum and TCP segmentation
	// offload (TUNSETOFFLOAD CSUM|TSO4|TSO6; see vnet.go): ReadVnet and
	// WriteVnet then move TCP super-segments of up to 64 KiB with a partial
	// checksum. When the kernel refuses, the TAP is opened without it
	// (Device.Offload says which). ReadFrame and WriteFrame still move
	// plain frames, but a frame read may be a super-segment longer than
	// the MTU.
	Offload bool
}

// createdTxQLen is the transmit queue length (the NIC's receive ring, seen
// from the kernel) of a TAP OpenDevice creates.
const createdTxQLen = 4096

// Device is an open TAP device. It implements FrameIO: every read returns
// exactly one Ethernet frame and every write sends one (IFF_NO_PI: no
// packet-information prefix).
type Device struct {
	name      string
	netns     string // the namespace the TAP lives in ("" for this process's)
	created   bool
	mtu       int
	kernelMAC [6]byte
	file      *os.File
	offload   bool            // frames carry a virtio_net_hdr (vnet.go)
	loDown    bool            // the namespace's lo was down (device_lo.go)
	raw       syscall.RawConn // the fd's, for the reads and writes (nowait.go)
	rd, wr    vecOp           // every read, every write

	// undo puts an attached TAP's configuration back as OpenDevice found
	// it (except its up state); nil for a created TAP, which vanishes.
	undo func() error

	closeOnce sync.Once
	closeErr  error
}

var _ FrameIO = (*Device)(nil)

// OpenDevice creates or attaches the TAP cfg names and configures it: MTU,
// bridge, kernel-side addresses, link up. A TAP it creates disappears when
// the Device is closed; an existing (persistent) TAP is left in place.
// Nothing it created survives a failed open.
func OpenDevice(cfg DeviceConfig) (*Device, error) {
	d, err := openDevice(cfg)
	return d, withPrivilegeHint(err)
}

// ErrNeedsPrivilege is wrapped by an open that the kernel refused for want
// of privilege, with the remedy in its words.
var ErrNeedsPrivilege = errors.New("the TAP mode needs root (CAP_NET_ADMIN in the TAP's network namespace): run it with sudo, or leave out --tap for the embedded mode, which needs no privilege")

// withPrivilegeHint adds to a refusal for want of privilege (TUNSETIFF,
// entering a namespace, netlink changes) what the user can do about it.
// Some refusals come without their errno (netlink's namespace switch
// words it with %v), so a process without CAP_NET_ADMIN gets the hint on
// any failure.
func withPrivilegeHint(err error) error {
	if err == nil || !(errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) || !hasCapNetAdmin()) {
		return err
	}
	return fmt.Errorf("%w (%w)", err, ErrNeedsPrivilege)
}

// hasCapNetAdmin reports whether this process's effective capabilities
// hold CAP_NET_ADMIN (in its own user namespace).
func hasCapNetAdmin() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return true // unknown: say nothing rather than something wrong
	}
	return data[unix.CAP_NET_ADMIN/32].Effective&(1<<(unix.CAP_NET_ADMIN%32)) != 0
}

func openDevice(cfg DeviceConfig) (*Device, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	ns, err := openNetns(cfg.Netns)
	if err != nil {
		return nil, err
	}
	defer func() {
		if ns.IsOpen() {
			ns.Close()
		}
	}()
	// NETLINK_ROUTE only: the handle opens one socket per family asked for.
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("tap: netlink in %s: %w", cfg.where(), err)
	}
	keepHandle := false
	defer func() {
		if !keepHandle {
			h.Close()
		}
	}()

	existing, err := findTAP(h, cfg)
	if err != nil {
		return nil, err
	}
	var bridge netlink.Link
	if cfg.Bridge != "" {
		// Checked before the TAP exists, so a typo creates nothing.
		if bridge, err = findBridge(h, cfg); err != nil {
			return nil, err
		}
	}
	file, offload, err := openTAPFile(ns, cfg, existing)
	if err != nil {
		return nil, err
	}
	d := &Device{name: cfg.Name, netns: cfg.Netns, created: existing == nil, file: file, offload: offload}
	if d.raw, err = file.SyscallConn(); err != nil {
		return nil, errors.Join(fmt.Errorf("tap: %s: %w", cfg.Name, err), file.Close())
	}
	d.initIO(false) // the fd is ours alone
	c := &tapConfigurer{h: h, cfg: cfg, created: d.created}
	if err := c.configure(d, bridge); err != nil {
		// Closing the fd removes a TAP we created; an attached one gets
		// its configuration back.
		return nil, errors.Join(err, file.Close(), c.undoAll())
	}
	d.loDown = cfg.Netns != "" && loopbackDown(h)
	if len(c.undo) > 0 {
		keepHandle = true
		d.undo = func() error {
			defer h.Close()
			return c.undoAll()
		}
	}
	return d, nil
}

// openTAPFile creates the TAP, or attaches to the existing one, in ns,
// with the virtio_net_hdr and offloads if cfg asks for them and the kernel
// takes them (the bool says whether it did).
func openTAPFile(ns netns.NsHandle, cfg DeviceConfig, existing *netlink.Tuntap) (*os.File, bool, error) {
	t := tunOpen{name: cfg.Name}
	if existing != nil {
		// TUNSETIFF must repeat the device's queue mode, and TUNSETPERSIST
		// is always issued: passing the persistence found keeps it (false
		// would make a persistent TAP vanish when we close it).
		t.persist = !existing.NonPersist
		t.multiQueue = existing.Flags&netlink.TUNTAP_MULTI_QUEUE != 0
	}
	var file *os.File
	offload := cfg.Offload
	err := inNetns(ns, func() error {
		var err error
		if offload {
			t.vnet = true
			if file, err = t.open(); err == nil {
				return nil
			}
			// A kernel without the offload ioctls (or a sandbox's TUN)
			// still gets a working TAP, without offload.
			offload, t.vnet = false, false
		}
		file, err = t.open()
		return err
	})
	if err != nil {
		if existing != nil && errors.Is(err, unix.EBUSY) {
			return nil, false, fmt.Errorf("tap: attach to %s in %s (is another process using it?): %w", cfg.Name, cfg.where(), err)
		}
		return nil, false, fmt.Errorf("tap: open %s in %s: %w", cfg.Name, cfg.where(), err)
	}
	return file, offload, nil
}

// tapConfigurer applies a DeviceConfig to an open TAP and keeps, for an
// attached TAP, how to put each change back (undo, in the order made).
type tapConfigurer struct {
	h       *netlink.Handle
	cfg     DeviceConfig
	created bool
	link    netlink.Link
	undo    []func() error
}

// configure sets the MTU, the bridge, the kernel-side addresses, the
// transmit queue and the link up, then reads back the MTU and the
// kernel's MAC into d.
func (c *tapConfigurer) configure(d *Device, bridge netlink.Link) error {
	var err error
	if c.link, err = c.h.LinkByName(c.cfg.Name); err != nil {
		return fmt.Errorf("tap: look up %s after opening it: %w", c.cfg.Name, err)
	}
	attrs := c.link.Attrs()
	if err := c.setMTU(attrs.MTU); err != nil {
		return err
	}
	if bridge != nil && attrs.MasterIndex != bridge.Attrs().Index {
		if err := c.setMaster(bridge, attrs.MasterIndex); err != nil {
			return err
		}
	}
	if err := c.addAddrs(); err != nil {
		return err
	}
	if c.created && attrs.TxQLen < createdTxQLen {
		// The kernel's queue toward the NIC is the NIC's receive ring:
		// frames wait there while the NIC's reader is off the CPU (a busy
		// host), and beyond it they are dropped. A new TAP's default (500
		// or 1000 frames) overflows under a 64 KiB burst at a scheduling
		// hiccup; a real RNIC has rings of a few thousand descriptors.
		if err := c.h.LinkSetTxQLen(c.link, createdTxQLen); err != nil {
			return fmt.Errorf("tap: set txqueuelen of %s to %d: %w", c.cfg.Name, createdTxQLen, err)
		}
	}
	if err := c.h.LinkSetUp(c.link); err != nil {
		return fmt.Errorf("tap: set %s up: %w", c.cfg.Name, err)
	}
	// Read back what the kernel now says rather than trusting our requests.
	link, err := c.h.LinkByName(c.cfg.Name)
	if err != nil {
		return fmt.Errorf("tap: look up %s after configuring it: %w", c.cfg.Name, err)
	}
	d.mtu = link.Attrs().MTU
	copy(d.kernelMAC[:], link.Attrs().HardwareAddr)
	return nil
}

// onUndo records how to undo a change to an attached TAP.
func (c *tapConfigurer) onUndo(f func() error) {
	if !c.created {
		c.undo = append(c.undo, f)
	}
}

// undoAll puts back the changes, last first.
func (c *tapConfigurer) undoAll() error {
	var errs []error
	for _, u := range slices.Backward(c.undo) {
		errs = append(errs, u())
	}
	return errors.Join(errs...)
}

func (c *tapConfigurer) setMTU(oldMTU int) error {
	if c.cfg.MTU == 0 || c.cfg.MTU == oldMTU {
		return nil
	}
	if err := c.h.LinkSetMTU(c.link, c.cfg.MTU); err != nil {
		return fmt.Errorf("tap: set MTU of %s to %d: %w", c.cfg.Name, c.cfg.MTU, err)
	}
	c.onUndo(func() error {
		if err := c.h.LinkSetMTU(c.link, oldMTU); err != nil {
			return fmt.Errorf("tap: restore MTU of %s to %d: %w", c.cfg.Name, oldMTU, err)
		}
		return nil
	})
	return nil
}

func (c *tapConfigurer) setMaster(bridge netlink.Link, oldMaster int) error {
	if err := c.h.LinkSetMaster(c.link, bridge); err != nil {
		return fmt.Errorf("tap: enslave %s to bridge %s: %w", c.cfg.Name, c.cfg.Bridge, err)
	}
	c.onUndo(func() error {
		var err error
		if oldMaster == 0 {
			err = c.h.LinkSetNoMaster(c.link)
		} else {
			err = c.h.LinkSetMasterByIndex(c.link, oldMaster)
		}
		if err != nil {
			return fmt.Errorf("tap: restore master of %s: %w", c.cfg.Name, err)
		}
		return nil
	})
	return nil
}

// addAddrs adds the kernel-side addresses the TAP does not have yet.
func (c *tapConfigurer) addAddrs() error {
	if len(c.cfg.Addrs) == 0 {
		return nil
	}
	have, err := c.h.AddrList(c.link, netlink.FAMILY_ALL)
	if err != nil {
		return fmt.Errorf("tap: list addresses of %s: %w", c.cfg.Name, err)
	}
	for _, p := range c.cfg.Addrs {
		if hasAddr(have, p) {
			continue
		}
		addr := &netlink.Addr{IPNet: prefixIPNet(p)}
		if err := c.h.AddrAdd(c.link, addr); err != nil {
			return fmt.Errorf("tap: add address %s to %s: %w", p, c.cfg.Name, err)
		}
		c.onUndo(func() error {
			if err := c.h.AddrDel(c.link, addr); err != nil {
				return fmt.Errorf("tap: remove address %s from %s: %w", p, c.cfg.Name, err)
			}
			return nil
		})
	}
	return nil
}

// Name returns the TAP's interface name.
func (d *Device) Name() string { return d.name }

// Created reports whether OpenDevice created the TAP (it vanishes on
// Close) rather than attaching to an existing persistent one (left in
// place, configured as it was found).
func (d *Device) Created() bool { return d.created }

// MTU returns the TAP's MTU as read back after configuring it.
func (d *Device) MTU() int { return d.mtu }

// KernelMAC returns the MAC address of the TAP's kernel side. The NIC
// uses its own MAC; this one is informational.
func (d *Device) KernelMAC() [6]byte { return d.kernelMAC }

// ReadFrame blocks until the kernel side sends a frame and copies it into
// b. It waits in Go's poller, never in the kernel (nowait.go), so Close
// wakes a blocked ReadFrame, which then returns an error wrapping
// os.ErrClosed.
// On an offload Device the frame's virtio_net_hdr is read apart and a
// partial checksum finished (readFrameVnet).
func (d *Device) ReadFrame(b []byte) (int, error) {
	if d.offload {
		return d.readFrameVnet(b)
	}
	n, err := d.rd.do(d.raw, b, nil)
	if err != nil {
		return 0, fmt.Errorf("tap: read from %s: %w", d.name, err)
	}
	return n, nil
}

// WriteFrame sends one Ethernet frame (without FCS) out of the TAP's
// kernel side (behind a zero virtio_net_hdr on an offload Device). Writes
// are serialised, and a TAP takes each write whole, so frames never
// interleave.
func (d *Device) WriteFrame(b []byte) error {
	if d.offload {
		return d.WriteVnet(VnetHdr{}, b)
	}
	if _, err := d.wr.do(d.raw, b, nil); err != nil {
		return fmt.Errorf("tap: write to %s: %w", d.name, err)
	}
	return nil
}

// Close closes the TAP's fd, which wakes a blocked ReadFrame. A TAP we
// created disappears with it; an attached one gets back the MTU, bridge
// and addresses it had, but stays up. Closing again returns the first
// result.
func (d *Device) Close() error {
	d.closeOnce.Do(func() {
		var errs []error
		if err := d.file.Close(); err != nil {
			errs = append(errs, fmt.Errorf("tap: close %s: %w", d.name, err))
		}
		if d.undo != nil {
			errs = append(errs, d.undo())
		}
		d.closeErr = errors.Join(errs...)
	})
	return d.closeErr
}

// tunOpen says how to bind /dev/net/tun to a TAP.
type tunOpen struct {
	name                string
	persist, multiQueue bool
	vnet                bool // IFF_VNET_HDR and the offloads
}

// TUNSETOFFLOAD flags (linux/if_tun.h): the kernel may hand the NIC frames
// with a partial checksum and TCP super-segments over IPv4 and IPv6.
const (
	tunFCsum = 0x01
	tunFTSO4 = 0x02
	tunFTSO6 = 0x04
)

// open opens /dev/net/tun and binds it to the TAP, in the calling thread's
// network namespace (the TUNSETIFF of Documentation/networking/tuntap.rst).
// The fd is opened close-on-exec, so no child can inherit it and keep the
// TAP alive after we close it, and non-blocking, so that os.NewFile hands
// it to Go's poller and Close wakes a blocked read.
func (t tunOpen) open() (*os.File, error) {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open /dev/net/tun: %w", err)
	}
	if err := t.bind(fd); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), "/dev/net/tun"), nil
}

func (t tunOpen) bind(fd int) error {
	ifr, err := unix.NewIfreq(t.name)
	if err != nil {
		return err
	}
	flags := uint16(unix.IFF_TAP | unix.IFF_NO_PI)
	if t.multiQueue {
		flags |= unix.IFF_MULTI_QUEUE
	}
	if t.vnet {
		flags |= unix.IFF_VNET_HDR
	}
	ifr.SetUint16(flags)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		return fmt.Errorf("TUNSETIFF: %w", err)
	}
	persist := 0
	if t.persist {
		persist = 1
	}
	if err := unix.IoctlSetInt(fd, unix.TUNSETPERSIST, persist); err != nil {
		return fmt.Errorf("TUNSETPERSIST: %w", err)
	}
	if !t.vnet {
		return nil
	}
	if err := unix.IoctlSetPointerInt(fd, unix.TUNSETVNETHDRSZ, vnetHdrLen); err != nil {
		return fmt.Errorf("TUNSETVNETHDRSZ: %w", err)
	}
	// Little-endian whatever the host's order (virtio 1.0's rule).
	if err := unix.IoctlSetPointerInt(fd, unix.TUNSETVNETLE, 1); err != nil {
		return fmt.Errorf("TUNSETVNETLE: %w", err)
	}
	if err := unix.IoctlSetInt(fd, unix.TUNSETOFFLOAD, tunFCsum|tunFTSO4|tunFTSO6); err != nil {
		return fmt.Errorf("TUNSETOFFLOAD: %w", err)
	}
	return nil
}

// findTAP looks up cfg.Name: the TAP to attach to, nil when there is no
// such link (one will be created), or an error when the name is taken by
// something that is not a TAP.
func findTAP(h *netlink.Handle, cfg DeviceConfig) (*netlink.Tuntap, error) {
	link, err := h.LinkByName(cfg.Name)
	if err != nil {
		if _, ok := err.(netlink.LinkNotFoundError); ok {
			return nil, nil
		}
		return nil, fmt.Errorf("tap: look up %s in %s: %w", cfg.Name, cfg.where(), err)
	}
	tt, ok := link.(*netlink.Tuntap)
	if !ok {
		return nil, fmt.Errorf("tap: %s in %s exists and is a %s link, not a TAP", cfg.Name, cfg.where(), link.Type())
	}
	if tt.Mode != netlink.TUNTAP_MODE_TAP {
		return nil, fmt.Errorf("tap: %s in %s exists and is a TUN device, not a TAP", cfg.Name, cfg.where())
	}
	return tt, nil
}

// findBridge looks up cfg.Bridge, which must exist and be a bridge.
func findBridge(h *netlink.Handle, cfg DeviceConfig) (netlink.Link, error) {
	link, err := h.LinkByName(cfg.Bridge)
	if err != nil {
		return nil, fmt.Errorf("tap: bridge %s in %s: %w", cfg.Bridge, cfg.where(), err)
	}
	if _, ok := link.(*netlink.Bridge); !ok {
		return nil, fmt.Errorf("tap: %s in %s is a %s link, not a bridge", cfg.Bridge, cfg.where(), link.Type())
	}
	return link, nil
}

// validate checks cfg before anything touches the system.
func (cfg DeviceConfig) validate() error {
	if err := checkIfName(cfg.Name); err != nil {
		return fmt.Errorf("tap: device name: %w", err)
	}
	if cfg.Bridge != "" {
		if err := checkIfName(cfg.Bridge); err != nil {
			return fmt.Errorf("tap: bridge name: %w", err)
		}
	}
	if cfg.MTU != 0 && (cfg.MTU < MinDeviceMTU || cfg.MTU > MaxDeviceMTU) {
		return fmt.Errorf("tap: MTU %d of %s out of range %d..%d", cfg.MTU, cfg.Name, MinDeviceMTU, MaxDeviceMTU)
	}
	for _, p := range cfg.Addrs {
		if !p.IsValid() {
			return fmt.Errorf("tap: invalid address prefix for %s", cfg.Name)
		}
	}
	return nil
}

// checkIfName applies the kernel's dev_valid_name rules, so a bad name
// fails here with a reason instead of as EINVAL from an ioctl.
func checkIfName(name string) error {
	switch {
	case name == "":
		return errors.New("empty")
	case len(name) > MaxDeviceNameLen:
		return fmt.Errorf("%q is %d bytes, longer than %d", name, len(name), MaxDeviceNameLen)
	case name == "." || name == "..":
		return fmt.Errorf("%q is not a valid interface name", name)
	case strings.ContainsAny(name, "/:\x00") || strings.IndexFunc(name, isSpace) >= 0:
		return fmt.Errorf("%q contains '/', ':', NUL or white space", name)
	}
	return nil
}

// isSpace is the kernel's isspace for the ASCII range.
func isSpace(r rune) bool {
	return r == ' ' || (r >= '\t' && r <= '\r')
}

// where names the namespace a config points at, for error messages.
func (cfg DeviceConfig) where() string {
	if cfg.Netns == "" {
		return "the current network namespace"
	}
	return "network namespace " + cfg.Netns
}

// hasAddr reports whether p is already among the link's addresses.
func hasAddr(have []netlink.Addr, p netip.Prefix) bool {
	for _, a := range have {
		if a.IPNet == nil {
			continue
		}
		ip, ok := netip.AddrFromSlice(a.IP)
		if !ok {
			continue
		}
		bits, _ := a.Mask.Size()
		if ip.Unmap() == p.Addr().Unmap() && bits == p.Bits() {
			return true
		}
	}
	return false
}

// prefixIPNet converts p to the net.IPNet netlink wants, keeping the host
// part of the address (10.0.0.1/24, not 10.0.0.0/24).
func prefixIPNet(p netip.Prefix) *net.IPNet {
	a := p.Addr().Unmap()
	return &net.IPNet{IP: a.AsSlice(), Mask: net.CIDRMask(p.Bits(), a.BitLen())}
}
