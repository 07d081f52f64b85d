// Package tapnic assembles a whole NIC in the TAP mode (nic/README.md,
// "Modes"): a TAP device (tap.Device), the host stack on it (tap.Host: MAC
// filter, ARP, ND, ICMP, demux), the RoCEv2 engine on the Host's RoCE
// endpoint, and gVisor's TCP (tap.TCPStack) for iWARP and for the tools'
// own side channels.
//
//	             ┌────────── NIC ───────────────────────────────┐
//	verbs ──────▶│ embedded.NIC (nic.Device + roce.Stack)       │
//	iwarp ──────▶│ Streams (netstack.Network on the TCPStack)   │
//	side channel▶│ Dial/Listen (gonet on the TCPStack)          │
//	             │        tap.Host ── tap.Device ── TAP ── wire │
//	             └──────────────────────────────────────────────┘
//
// One MAC and one set of addresses serve both protocols, as on a real RNIC
// that is also its host's only interface.
package tapnic

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"

	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/roce"
	"github.com/rnic/rnic/tap"
	"github.com/rnic/rnic/transport"
	"github.com/rnic/rnic/transport/pcap"
	"github.com/rnic/rnic/transport/stream"
	"github.com/rnic/rnic/transport/udp"
)

// MaxMTU is the largest Ethernet MTU a TAP-mode NIC takes: jumbo frames,
// enough for path MTU 4096 (RoCEv2 needs 4096 + 80 bytes of headers).
const MaxMTU = 9000

// Config describes a NIC in the TAP mode.
type Config struct {
	// Name is the RDMA device name (rnic0 if empty).
	Name string
	// TAP is the TAP interface: attached if it exists (left in place on
	// Close), created otherwise (removed on Close).
	TAP string
	// Netns, if set, names the network namespace (ip netns) the TAP lives
	// in: a TAP this NIC creates is created there.
	Netns string
	// Bridge, if set, is a bridge (in Netns) the TAP is enslaved to.
	Bridge string
	// Prefixes are the NIC's own addresses with their on-link prefixes
	// (IPv4 and/or IPv6), in GID table order after index 0, which is the
	// link-local address fe80::/64 of MAC (EUI-64) as on every Linux RoCE
	// port: the NIC answers ND for it and receives RoCEv2 sent to it.
	Prefixes []netip.Prefix
	// MAC is the NIC's Ethernet address; zero derives a locally administered
	// one from the first address (the embedded mode's rule, so captures of
	// both modes read alike).
	MAC [6]byte
	// MTU is the Ethernet MTU (1500 if zero, at most MaxMTU); the TAP gets
	// it too.
	MTU int
	// Pcap, if set, records every frame in and out of the TAP: RoCEv2, TCP
	// (iWARP and side channels), ARP, ND and ICMP alike. With offload the
	// TCP frames are the super-segments the NIC and the kernel exchange, as
	// tcpdump shows them on a host with TSO and GRO.
	Pcap *pcap.Writer
	// NoOffload turns off host segmentation and checksum offload
	// (tap.DeviceConfig.Offload, on when the kernel takes it): TCP (iWARP,
	// side channels) then crosses the TAP in wire-sized segments, one per
	// frame in the capture, at a higher cost per byte.
	NoOffload bool
	// Trace, if set, receives the RoCE engine's trace.
	Trace io.Writer
	// TraceEvents, if set, receives the RoCE engine's trace events (see
	// embedded.Config.TraceEvents).
	TraceEvents func(roce.TraceEvent)
	// Faults, if set, puts seeded faults on the wire (faults.go); its seed
	// must be resolved (transport.FaultSpec.Resolve). It turns offload
	// off: a fault hits one wire frame, not a 64 KiB super-segment. Pcap
	// then records the wire as the faults leave it, with a note on every
	// frame they touched.
	Faults *transport.FaultSpec
	// FaultLog, if set with Faults, is told the faults at Open and what
	// they did (FaultReport) at Close.
	FaultLog io.Writer
	// Script, if set, decides the fate of each IP frame on the wire
	// before Faults' random draws (transport.FaultConfig.Script: AtoB is
	// what the NIC sends, BtoA what it receives), so that a scripted
	// scenario loses exactly the frame it means to. Like Faults it turns
	// offload off and makes Pcap record the wire with notes.
	Script transport.Script
}

// ErrConfig is wrapped by configuration errors.
var ErrConfig = errors.New("tapnic: bad configuration")

// NIC is a NIC in the TAP mode. Its embedded *embedded.NIC is the RoCEv2
// verbs device.
type NIC struct {
	*embedded.NIC
	// Addrs are the NIC's addresses (Config.Prefixes without their bits).
	Addrs []netip.Addr
	// Streams carries iWARP connections over the NIC's own TCP
	// (iwarp.Config.Network).
	Streams stream.Network

	dev       *tap.Device
	faults    *tap.FaultIO // nil without Config.Faults
	faultSpec transport.FaultSpec
	faultLog  io.Writer
	host      *tap.Host
	tcp       *tap.TCPStack
	prefixes  []netip.Prefix // the Host's: the link-local address, then Config.Prefixes
	once      sync.Once
	err       error
	stopWatch func() // the watch of the TAP's link (tap.Device.WatchLink)

	portMu sync.Mutex // guards port and closed
	port   *HostPort  // hostport.go
	closed bool
}

// Open opens the TAP, starts the host stack and builds the NIC. On failure
// everything opened so far is closed again (a TAP it created vanishes).
func Open(cfg Config) (*NIC, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if cfg.MTU == 0 {
		cfg.MTU = 1500
	}
	addrs := make([]netip.Addr, len(cfg.Prefixes))
	for i, p := range cfg.Prefixes {
		addrs[i] = p.Addr()
	}
	if cfg.MAC == ([6]byte{}) {
		cfg.MAC = udp.SyntheticMAC(addrs[0])
	}
	hostPrefixes := withLinkLocal(cfg.Prefixes, cfg.MAC)
	dev, err := tap.OpenDevice(tap.DeviceConfig{Name: cfg.TAP, Netns: cfg.Netns, Bridge: cfg.Bridge, MTU: cfg.MTU,
		Offload: !cfg.NoOffload && !cfg.faulty()})
	if err != nil {
		return nil, fmt.Errorf("tapnic: %w", err)
	}
	var wire tap.FrameIO = dev
	var faults *tap.FaultIO
	hostPcap := cfg.Pcap
	if cfg.faulty() {
		if faults, err = openFaults(&cfg, dev); err != nil {
			dev.Close()
			return nil, fmt.Errorf("tapnic: %w", err)
		}
		wire = faults
		hostPcap = nil // the faults record the wire
	}
	host, err := tap.NewHost(tap.HostConfig{IO: wire, MAC: cfg.MAC, Prefixes: hostPrefixes, MTU: cfg.MTU, Pcap: hostPcap})
	if err != nil {
		wire.Close()
		return nil, fmt.Errorf("tapnic: %w", err)
	}
	tcfg := tap.TCPStackConfig{Prefixes: cfg.Prefixes, MTU: cfg.MTU, Output: host.SendIP}
	if host.Offload() {
		tcfg.OutputFrame = host.SendFrame // the same, without a copy per packet
	}
	tcp, err := tap.NewTCPStack(tcfg)
	if err != nil {
		host.Close()
		return nil, fmt.Errorf("tapnic: %w", err)
	}
	host.SetTCP(tcp.Deliver)
	host.SetTCPValidated(tcp.DeliverValidated) // receive checksum offload
	en, err := embedded.NewNIC(embedded.Config{Name: cfg.Name, Addr: addrs[0], Addrs: addrs, MAC: cfg.MAC,
		LinkLocal: true, PortEvents: true, MTU: cfg.MTU, Link: host.RoCE(), Groups: host, Resolve: host.Lookup, Trace: cfg.Trace,
		TraceEvents: cfg.TraceEvents})
	if err != nil {
		tcp.Close()
		host.Close()
		return nil, fmt.Errorf("tapnic: %w", err)
	}
	host.Start()
	n := &NIC{NIC: en, Addrs: addrs, Streams: tcp.Streams(stream.TCPConfig{}), dev: dev, host: host, tcp: tcp,
		prefixes: hostPrefixes, faults: faults, faultLog: cfg.FaultLog}
	if cfg.Faults != nil {
		n.faultSpec = *cfg.Faults
	}
	// The port follows the TAP: ip link set TAP down/up makes it DOWN or
	// ACTIVE, with IBV_EVENT_PORT_ERR or IBV_EVENT_PORT_ACTIVE.
	if n.stopWatch, err = dev.WatchLink(en.Device.SetPortActive); err != nil {
		n.Close()
		return nil, fmt.Errorf("tapnic: %w", err)
	}
	return n, nil
}

// withLinkLocal returns the host stack's prefixes: the link-local address
// of mac (fe80::/64, EUI-64: GID index 0, as on Linux) first, then the
// configured ones (a configured link-local address of its own stays).
func withLinkLocal(prefixes []netip.Prefix, mac [6]byte) []netip.Prefix {
	ll := netip.PrefixFrom(nic.LinkLocalGID(mac), 64)
	out := []netip.Prefix{ll}
	for _, p := range prefixes {
		if p.Addr() != ll.Addr() {
			out = append(out, p)
		}
	}
	return out
}

func (cfg *Config) check() error {
	switch {
	case cfg.TAP == "":
		return fmt.Errorf("%w: no TAP name", ErrConfig)
	case len(cfg.Prefixes) == 0:
		return fmt.Errorf("%w: TAP %s has no address", ErrConfig, cfg.TAP)
	case cfg.MTU < 0 || cfg.MTU > MaxMTU || (cfg.MTU != 0 && cfg.MTU < 576):
		return fmt.Errorf("%w: MTU %d, must be 576..%d", ErrConfig, cfg.MTU, MaxMTU)
	}
	seen := map[netip.Addr]bool{}
	for _, p := range cfg.Prefixes {
		a := p.Addr()
		switch {
		case !p.IsValid() || a.Is4In6() || a.IsUnspecified() || a.IsMulticast() || a.IsLoopback():
			return fmt.Errorf("%w: %v is not a host address", ErrConfig, p)
		case p.IsSingleIP() && a.Is4():
			return fmt.Errorf("%w: %v: give the on-link prefix (e.g. /24)", ErrConfig, p)
		case seen[a]:
			return fmt.Errorf("%w: %v given twice", ErrConfig, a)
		}
		seen[a] = true
	}
	return nil
}

// AddrFor returns the NIC's first address of the family of peer (the source
// address toward it), or the first address when it has none of that family.
func (n *NIC) AddrFor(peer netip.Addr) netip.Addr {
	peer = peer.Unmap()
	for _, a := range n.Addrs {
		if a.Is4() == peer.Is4() {
			return a
		}
	}
	return n.Addrs[0]
}

// Dial opens a TCP connection from the NIC's own address to remote through
// the NIC's TCP stack (a tool's side channel): on a host whose only
// interface is this NIC, that is the only way out.
func (n *NIC) Dial(ctx context.Context, remote netip.AddrPort) (net.Conn, error) {
	c, err := n.tcp.Dial(ctx, n.AddrFor(remote.Addr()), remote)
	if err != nil {
		return nil, fmt.Errorf("tapnic: dial %v: %w", remote, err)
	}
	return c, nil
}

// Listen listens on the NIC's TCP stack (port 0: any free port; the zero
// Addr: every address of the NIC).
func (n *NIC) Listen(addr netip.AddrPort) (net.Listener, error) {
	l, err := n.tcp.Listen(addr)
	if err != nil {
		return nil, fmt.Errorf("tapnic: %w", err) // it says "listen tcp ADDR"
	}
	return l, nil
}

// Host is the NIC's host stack (its counters, its neighbour cache).
func (n *NIC) Host() *tap.Host { return n.host }

// TAP is the NIC's TAP device.
func (n *NIC) TAP() *tap.Device { return n.dev }

// Close detaches the host port, stops the RoCE engine (owed ACKs leave
// first), the TCP stack and the host stack, and closes the TAP (a TAP the NIC created vanishes).
func (n *NIC) Close() error {
	n.once.Do(func() {
		n.logFaultReport(n.faultLog) // while the engines' counters still count
		if n.stopWatch != nil {
			n.stopWatch()
		}
		n.closePort()
		n.err = n.NIC.Close() // RoCE engine, verbs device, its endpoint on the Host
		n.tcp.Close()
		if err := n.host.Close(); n.err == nil {
			n.err = err
		}
	})
	return n.err
}

// PathMTU is the largest path MTU an Ethernet MTU allows, rxe's rule as
// nic.Device applies it (the largest IB MTU ≤ MTU − 80, the RoCEv2
// headers): 1500 gives 1024, 9000 gives 4096; 0 (the default) means 1500;
// the result is 0 when not even 256 fits.
func PathMTU(ethMTU int) int {
	if ethMTU == 0 {
		ethMTU = 1500
	}
	for m := 4096; m >= 256; m /= 2 {
		if m <= ethMTU-80 {
			return m
		}
	}
	return 0
}
