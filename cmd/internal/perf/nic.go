// Where one side lives: its verbs device (an ibv.Device, whatever the
// backend) and the network its side channel goes through.
//
//   - A local NIC (a plain -d name, the default), built here: in the
//     embedded mode a kernel UDP socket on the NIC's address for RoCEv2,
//     kernel TCP for the side channel; in the TAP mode the NIC itself (its
//     TAP for RoCEv2, its own IP and TCP stack for the side channel), as on
//     a machine whose only interface is the NIC, so two TAP-mode sides on
//     one bridge need no address on the kernel's side.
//   - A NIC of another backend (rnicd's NAME@SOCKET, libibverbs'
//     verbs:NAME), opened once by Run; the side channel goes through the
//     device's ibv.Network if it has one, else kernel TCP. In one process
//     both sides live on it, their QPs talking through its port.

package perf

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"

	"github.com/rnic/rnic/cmd/internal/progkit"
	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rdmacm"
	"github.com/rnic/rnic/nic/tapnic"
)

// linkMTU is the Ethernet MTU the embedded NIC is given: jumbo frames, so
// that every path MTU up to 4096 is available (the active MTU is the
// largest IB MTU ≤ link MTU − 80). Loopback carries 64 KiB datagrams, and
// peers on a real network agree on the path MTU through --mtu anyway.
const linkMTU = 9000

// host is one side's device and its side channel's network.
type host struct {
	// dev is the RoCEv2 verbs device; nil for an iWARP side on kernel
	// TCP, which has no RoCE NIC (its iWARP NIC is the side's own,
	// iwarp.go).
	dev ibv.Device
	// nic is the embedded NIC behind a local dev; nil for a device of
	// another backend.
	nic     *embedded.NIC
	net     ibv.Network
	streams embedded.StreamNetwork
	// close closes the NIC (and its TAP); nil when the host does not own
	// its device.
	close func() error
}

// Device is the side's verbs device.
func (h *host) Device() ibv.Device { return h.dev }

// NIC is the embedded NIC behind a local device, or nil.
func (h *host) NIC() *embedded.NIC { return h.nic }

// Listen listens for the side channel on addr (the zero address: every
// address).
func (h *host) Listen(addr netip.AddrPort) (net.Listener, error) { return h.net.Listen(addr) }

// Dial connects the side channel from local to remote.
func (h *host) Dial(ctx context.Context, local netip.Addr, remote netip.AddrPort) (net.Conn, error) {
	return h.net.Dial(ctx, local, remote)
}

// Retryable reports whether a failed Dial is worth repeating: the server
// may not be listening yet.
func (h *host) Retryable(err error) bool { return ibv.DialRetryable(h.net, err) }

// Streams carries iWARP connections: the NIC's own TCP in the TAP mode;
// nil, kernel TCP, otherwise.
func (h *host) Streams() embedded.StreamNetwork { return h.streams }

// Close closes what the host owns.
func (h *host) Close() error {
	if h.close == nil {
		return nil
	}
	return h.close()
}

// hostSpec says which NIC to open: a TAP (tap set) or the embedded
// mode's UDP socket on addr (or link, in tests).
type hostSpec struct {
	name  string
	tap   *tapnic.Config
	addr  netip.Addr
	link  embedded.Link
	pcap  *embedded.PcapWriter
	trace io.Writer
	// cm gives a local NIC rdma_cm on its QP1 (the device is then an
	// ibv.ConnManager, as rnicd's and libibverbs' devices are). Only -R
	// asks: a CM answers the MADs that reach QP1, which a NIC without
	// one drops.
	cm bool
}

// openHost opens the NIC spec describes; its peers listen on the same
// RoCEv2 port. With a device of another backend (r.dev) it is that
// device, which Run closes.
func openHost(r *resolved, spec hostSpec) (*host, error) {
	if r.dev != nil {
		return &host{dev: r.dev, net: ibv.NetworkOf(r.dev)}, nil
	}
	if r.IWARP && spec.tap == nil {
		// The host's kernel TCP alone (the side channel and the iWARP
		// streams; no RoCE NIC): each side opens its iWARP NIC once it
		// knows its address and MSS (iwarp.go, iwarp_host.go).
		return &host{net: ibv.KernelNetwork{}}, nil
	}
	if spec.tap != nil {
		tc := progkit.TAPConfig(*spec.tap, spec.name, spec.pcap, spec.trace)
		h, err := openTAPHost(tc, spec.cm)
		if err != nil {
			return nil, fmt.Errorf("perf: open NIC on TAP %s: %w", tc.TAP, err)
		}
		return h, nil
	}
	n, err := embedded.Open(embedded.UDPConfig{Name: spec.name, Addr: spec.addr, Port: r.RDMAPort, MTU: linkMTU,
		Pcap: spec.pcap, Trace: spec.trace, Link: spec.link, Budget: r.Budget})
	if err != nil {
		return nil, fmt.Errorf("perf: open NIC on %v: %w", spec.addr, err)
	}
	dev, err := localDevice(n, nic.IBVOptions{}, spec.cm)
	if err != nil {
		n.Close()
		return nil, err
	}
	return &host{dev: dev, nic: n, net: ibv.KernelNetwork{}, close: dev.Close}, nil
}

// localDevice is n as an ibv.Device, with rdma_cm if cm is set; closing
// the device closes the CM, then the NIC (opt.Close, if set).
func localDevice(n *embedded.NIC, opt nic.IBVOptions, cm bool) (ibv.Device, error) {
	if !cm {
		return n.Verbs(opt), nil
	}
	dev, err := rdmacm.LocalWith(n, rdmacm.Config{}, opt)
	if err != nil {
		return nil, fmt.Errorf("perf: %w", err)
	}
	return dev, nil
}

// openTAPHost opens a NIC in the TAP mode, with rdma_cm if cm is set;
// tests replace it.
var openTAPHost = func(cfg tapnic.Config, cm bool) (*host, error) {
	n, err := tapnic.Open(cfg)
	if err != nil {
		return nil, err
	}
	h, err := tapHost(n.NIC, n.Network(), n.Streams, n.Close, cm)
	if err != nil {
		n.Close()
		return nil, err
	}
	return h, nil
}

// tapHost is the TAP mode's host: the side channel goes through the NIC's
// own TCP (network), which sends from the NIC's address, and so do the
// iWARP streams.
func tapHost(n *embedded.NIC, network ibv.Network, streams embedded.StreamNetwork, closeNIC func() error, cm bool) (*host, error) {
	dev, err := localDevice(n, nic.IBVOptions{Network: network, Close: closeNIC}, cm)
	if err != nil {
		return nil, err
	}
	return &host{dev: dev, nic: n, net: network, streams: streams, close: dev.Close}, nil
}

// openDevice opens the device of another backend r names and picks the
// addresses and path MTU r left open from it (resolveDevice).
func openDevice(ctx context.Context, r *resolved) (ibv.Device, error) {
	return kit.OpenDevice(r.spec, func(dev ibv.Device) error { return r.resolveDevice(ctx, dev) })
}
