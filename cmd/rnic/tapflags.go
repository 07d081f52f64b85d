// The TAP-mode flags pingpong, perf and demo share, and their translation
// into tapnic configs.

package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"slices"

	"github.com/spf13/pflag"

	"github.com/rnic/rnic/nic/tapnic"
	"github.com/rnic/rnic/transport"
)

// tapModeHelp opens the TAP-mode paragraph of every TAP-mode command's
// help, which goes on with what the mode means for that command.
const tapModeHelp = `TAP mode (--tap NAME --ip CIDR, root): the NIC owns a TAP device with its
own MAC and IP addresses and answers ARP, ND and ping there; RoCEv2, iWARP
and the side channel all go through it, as on a host whose only interface
is the NIC.`

// tapFlags are the TAP-mode flags of one command line.
type tapFlags struct {
	taps, ips, macs []string
	mtu             int
	offload         bool
	netns, bridge   string
	faults          string
	// faultLog is told each NIC's faults at its start and what they did
	// at its end (tapnic.Config.FaultLog).
	faultLog io.Writer
	fs       *pflag.FlagSet
}

// addTAPFlags declares the flags on fs. perNIC says the command takes
// two NICs (demo), whose flags are given once per NIC in order.
func addTAPFlags(fs *pflag.FlagSet, perNIC bool) *tapFlags {
	f := &tapFlags{fs: fs, faultLog: os.Stderr}
	if perNIC {
		fs.StringArrayVar(&f.taps, "tap", nil, "TAP mode: the TAP device of rnic0, then rnic1 (created if missing, removed on exit)")
		fs.StringArrayVar(&f.ips, "ip", nil, "TAP mode: each NIC's address with its prefix (CIDR), rnic0's then rnic1's")
		fs.StringArrayVar(&f.macs, "mac", nil, "TAP mode: each NIC's MAC, rnic0's then rnic1's (default: derived from the address)")
	} else {
		fs.StringArrayVar(&f.taps, "tap", nil, "TAP mode: the NIC's TAP device (created if missing, removed on exit)")
		fs.StringArrayVar(&f.ips, "ip", nil, "TAP mode: the NIC's address with its prefix (CIDR); repeat for IPv4 and IPv6 (GID index = order from 1; 0 is link-local)")
		fs.StringArrayVar(&f.macs, "mac", nil, "TAP mode: the NIC's MAC (default: derived from the first address)")
	}
	fs.IntVar(&f.mtu, "tap-mtu", 1500, "TAP mode: the TAP's Ethernet MTU (the path MTU must fit: 1500 allows 1024)")
	fs.BoolVar(&f.offload, "tap-offload", true, "TAP mode: TCP segmentation and checksum offload with the kernel (iWARP and the side channel move 64 KiB super-segments; false: one wire segment per frame, also in --pcap)")
	fs.StringVar(&f.netns, "netns", "", "TAP mode: the network namespace (ip netns) of the TAP")
	fs.StringVar(&f.bridge, "bridge", "", "TAP mode: enslave the TAP(s) to this bridge")
	fs.StringVar(&f.faults, "faults", "", "TAP mode: seeded faults on the NIC's wire, e.g. loss=0.01,reorder=25%,dup=0.01,corrupt=0.001,delay=0.01,delay-time=1ms..5ms,reorder-window=1ms,seed=7,dir=tx|rx|both (tx, the default: the frames the NIC sends); turns --tap-offload off; the seed is printed, and what was injected at the end")
	return f
}

// errTAPFlags is wrapped by the TAP flags' errors (usage errors).
var errTAPFlags = errors.New("bad TAP flags")

// configs returns one tapnic config per --tap (none without --tap). With
// one --tap every --ip is that NIC's; with several, --ip and --mac are
// given once per NIC in order.
func (f *tapFlags) configs() ([]tapnic.Config, error) {
	if len(f.taps) == 0 {
		for _, name := range []string{"ip", "mac", "tap-mtu", "tap-offload", "netns", "bridge", "faults"} {
			if f.fs.Changed(name) {
				return nil, fmt.Errorf("%w: --%s without --tap", errTAPFlags, name)
			}
		}
		return nil, nil
	}
	if len(f.ips) == 0 {
		return nil, fmt.Errorf("%w: --tap without --ip: the NIC needs an address", errTAPFlags)
	}
	if f.mtu < 576 || f.mtu > tapnic.MaxMTU {
		return nil, fmt.Errorf("%w: --tap-mtu %d, must be 576..%d", errTAPFlags, f.mtu, tapnic.MaxMTU)
	}
	n := len(f.taps)
	if n > 1 && len(f.ips) != n {
		return nil, fmt.Errorf("%w: %d TAPs and %d --ip: give one --ip per NIC", errTAPFlags, n, len(f.ips))
	}
	if len(f.macs) > n {
		return nil, fmt.Errorf("%w: %d --mac for %d TAP(s)", errTAPFlags, len(f.macs), n)
	}
	faults, err := f.faultSpec()
	if err != nil {
		return nil, err
	}
	cfgs := make([]tapnic.Config, n)
	for i, name := range f.taps {
		if name == "" || slices.Contains(f.taps[:i], name) {
			return nil, fmt.Errorf("%w: --tap %q: empty or given twice", errTAPFlags, name)
		}
		cfgs[i] = tapnic.Config{TAP: name, MTU: f.mtu, Netns: f.netns, Bridge: f.bridge, NoOffload: !f.offload,
			Faults: faults, FaultLog: f.faultLog}
	}
	for i, s := range f.ips {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("%w: --ip %q: want ADDRESS/BITS, e.g. 10.0.0.1/24: %v", errTAPFlags, s, err)
		}
		if p.Addr().Is6() && f.mtu < 1280 {
			return nil, fmt.Errorf("%w: --ip %s: IPv6 needs --tap-mtu ≥ 1280", errTAPFlags, p)
		}
		c := &cfgs[0]
		if n > 1 {
			c = &cfgs[i]
		}
		c.Prefixes = append(c.Prefixes, p)
	}
	for i, s := range f.macs {
		hw, err := net.ParseMAC(s)
		if err != nil || len(hw) != 6 {
			return nil, fmt.Errorf("%w: --mac %q: want six bytes, e.g. 02:00:00:00:00:01", errTAPFlags, s)
		}
		if hw[0]&1 != 0 || [6]byte(hw) == [6]byte{} {
			return nil, fmt.Errorf("%w: --mac %s is not a unicast address", errTAPFlags, hw)
		}
		cfgs[i].MAC = [6]byte(hw)
	}
	return cfgs, nil
}

// faultSpec is --faults parsed, its seed drawn if not given (nil
// without --faults). Every NIC of the command line gets the same spec.
func (f *tapFlags) faultSpec() (*transport.FaultSpec, error) {
	if !f.fs.Changed("faults") {
		return nil, nil
	}
	fs, err := transport.ParseFaultSpec(f.faults)
	if err != nil {
		return nil, fmt.Errorf("%w: --faults: %v", errTAPFlags, err)
	}
	fs = fs.Resolve()
	return &fs, nil
}

// pathMTUFor is the largest path MTU a TAP's Ethernet MTU allows (the
// NIC's rule: the largest IB MTU ≤ MTU − 80).
func pathMTUFor(ethMTU int) int {
	for m := 4096; m >= 256; m /= 2 {
		if m <= ethMTU-80 {
			return m
		}
	}
	return 0
}

// tapPathMTU checks a path MTU flag against the TAP's MTU: an explicit
// one must fit, an unset one becomes the largest that fits.
func (f *tapFlags) tapPathMTU(flag string, v *int) error {
	fit := pathMTUFor(f.mtu)
	if !f.fs.Changed(flag) {
		*v = fit
		return nil
	}
	if *v > fit {
		return fmt.Errorf("%w: path MTU %d does not fit --tap-mtu %d (at most %d)", errTAPFlags, *v, f.mtu, fit)
	}
	return nil
}
