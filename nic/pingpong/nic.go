// Where one side lives: its NIC and the network its side channel goes
// through. In the embedded mode that is the host's kernel (a UDP socket on
// the NIC's address for RoCEv2, a TCP socket for the side channel); in the
// TAP mode it is the NIC itself (its TAP for RoCEv2, its own IP and TCP
// stack for the side channel), as on a machine whose only interface is the
// NIC, so two TAP-mode sides on one bridge need no address on the kernel's
// side.

package pingpong

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"

	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/tapnic"
)

// linkMTU is the Ethernet MTU the embedded NIC is given: jumbo frames, so
// that every path MTU up to 4096 is available (the active MTU is the
// largest IB MTU ≤ link MTU − 80). Loopback carries 64 KiB datagrams, and
// peers on a real network agree on the path MTU through -m anyway.
const linkMTU = 9000

// host is one side's NIC and its side channel's network: the seam between
// the embedded and the TAP mode.
type host interface {
	// NIC is the RoCEv2 verbs device.
	NIC() *embedded.NIC
	// Listen listens for the side channel on addr.
	Listen(addr netip.AddrPort) (net.Listener, error)
	// Dial connects the side channel from local to remote.
	Dial(ctx context.Context, local netip.Addr, remote netip.AddrPort) (net.Conn, error)
	// Retryable reports whether a failed Dial is worth repeating: the
	// server may not be listening yet.
	Retryable(err error) bool
	// Close closes the NIC (and, in the TAP mode, its TAP).
	Close() error
}

// openHost opens the NIC a resolved configuration asks for.
func openHost(r *resolved) (host, error) {
	name := r.IBDev
	if name == "" {
		name = "rnic0"
	}
	if r.TAP != nil {
		tc := *r.TAP
		if tc.Name == "" {
			tc.Name = name
		}
		if tc.Pcap == nil {
			tc.Pcap = r.Pcap
		}
		if tc.Trace == nil {
			tc.Trace = r.Trace
		}
		h, err := openTAPHost(tc)
		if err != nil {
			return nil, fmt.Errorf("pingpong: open NIC on TAP %s: %w", tc.TAP, err)
		}
		return h, nil
	}
	n, err := embedded.Open(embedded.UDPConfig{Name: name, Addr: r.Addr, Port: r.RDMAPort, MTU: linkMTU,
		Pcap: r.Pcap, Trace: r.Trace, Link: r.Link})
	if err != nil {
		return nil, fmt.Errorf("pingpong: open NIC on %v: %w", r.Addr, err)
	}
	return kernelHost{n}, nil
}

// kernelHost is the embedded mode: the NIC on a kernel UDP socket (or a
// test's link), the side channel on kernel TCP.
type kernelHost struct{ n *embedded.NIC }

func (h kernelHost) NIC() *embedded.NIC { return h.n }
func (h kernelHost) Close() error       { return h.n.Close() }

func (kernelHost) Listen(addr netip.AddrPort) (net.Listener, error) {
	return net.Listen("tcp", addr.String())
}

// Dial binds the client's end to its NIC address, so the server sees the
// address the client's NIC sends from (connect uses it when no GID is
// given).
func (kernelHost) Dial(ctx context.Context, local netip.Addr, remote netip.AddrPort) (net.Conn, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: local.AsSlice()}}
	return d.DialContext(ctx, "tcp", remote.String())
}

func (kernelHost) Retryable(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

// tapDevice is what the TAP mode uses of a *tapnic.NIC besides its verbs
// device.
type tapDevice interface {
	Dial(ctx context.Context, remote netip.AddrPort) (net.Conn, error)
	Listen(addr netip.AddrPort) (net.Listener, error)
	Close() error
}

// tapHost is the TAP mode: the side channel goes through the NIC's own
// TCP, which sends from the NIC's address.
type tapHost struct {
	n   *embedded.NIC
	dev tapDevice
}

// openTAPHost opens a NIC in the TAP mode; tests replace it.
var openTAPHost = func(cfg tapnic.Config) (host, error) {
	n, err := tapnic.Open(cfg)
	if err != nil {
		return nil, err
	}
	return tapHost{n: n.NIC, dev: n}, nil
}

func (h tapHost) NIC() *embedded.NIC { return h.n }
func (h tapHost) Close() error       { return h.dev.Close() }

func (h tapHost) Listen(addr netip.AddrPort) (net.Listener, error) { return h.dev.Listen(addr) }

func (h tapHost) Dial(ctx context.Context, _ netip.Addr, remote netip.AddrPort) (net.Conn, error) {
	return h.dev.Dial(ctx, remote)
}

// Retryable: any failure but a cancelled context. The NIC's TCP reports a
// refused connection in its own words, and the first attempt may also
// fail while the peer's TAP comes up and answers ARP/ND; DialRetry bounds
// the attempts.
func (tapHost) Retryable(err error) bool {
	return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}
