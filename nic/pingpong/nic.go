// Where one side lives: its verbs device and the network its side channel
// goes through. The device is an ibv.Device, whatever the backend:
//
//   - a local NIC (a plain -d name, the default), built here: in the
//     embedded mode a kernel UDP socket on the NIC's address, its side
//     channel on kernel TCP; in the TAP mode a TAP device, its side channel
//     on the NIC's own IP and TCP stack (ibv.Network), as on a machine
//     whose only interface is the NIC, so two TAP-mode sides on one bridge
//     need no address on the kernel's side;
//   - a NIC of another backend (rnicd's NAME@SOCKET, libibverbs'
//     verbs:NAME), opened by its string; the side channel goes through the
//     device's ibv.Network if it has one, else through kernel TCP.

package pingpong

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"

	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/tapnic"
)

// linkMTU is the Ethernet MTU the embedded NIC is given: jumbo frames, so
// that every path MTU up to 4096 is available (the active MTU is the
// largest IB MTU ≤ link MTU − 80). Loopback carries 64 KiB datagrams, and
// peers on a real network agree on the path MTU through -m anyway.
const linkMTU = 9000

// openDevice opens the device a resolved configuration names. A device of
// another backend is opened by its string, and the addresses r left open
// are then picked from its GID table (resolveDevice).
func openDevice(ctx context.Context, r *resolved) (ibv.Device, error) {
	if r.spec.Backend != ibv.BackendLocal {
		dev, err := ibv.Open(r.spec)
		if err != nil {
			return nil, fmt.Errorf("pingpong: %w", err)
		}
		if err := r.resolveDevice(ctx, dev); err != nil {
			dev.Close()
			return nil, err
		}
		return dev, nil
	}
	name := r.spec.Name
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
		dev, err := openTAPHost(tc)
		if err != nil {
			return nil, fmt.Errorf("pingpong: open NIC on TAP %s: %w", tc.TAP, err)
		}
		return dev, nil
	}
	n, err := embedded.Open(embedded.UDPConfig{Name: name, Addr: r.Addr, Port: r.RDMAPort, MTU: linkMTU,
		Pcap: r.Pcap, Trace: r.Trace, Link: r.Link})
	if err != nil {
		return nil, fmt.Errorf("pingpong: open NIC on %v: %w", r.Addr, err)
	}
	return n.Verbs(ibv.LocalOptions{}), nil
}

// openTAPHost opens a NIC in the TAP mode; tests replace it.
var openTAPHost = func(cfg tapnic.Config) (ibv.Device, error) {
	n, err := tapnic.Open(cfg)
	if err != nil {
		return nil, err
	}
	return n.NIC.Verbs(ibv.LocalOptions{Network: tapNetwork{n}, Close: n.Close}), nil
}

// tapNetwork is a TAP NIC's own TCP as an ibv.Network: it sends from the
// NIC's address of the peer's family, whatever local says.
type tapNetwork struct{ n *tapnic.NIC }

func (t tapNetwork) Listen(addr netip.AddrPort) (net.Listener, error) { return t.n.Listen(addr) }

func (t tapNetwork) Dial(ctx context.Context, _ netip.Addr, remote netip.AddrPort) (net.Conn, error) {
	return t.n.Dial(ctx, remote)
}

// sideNet is the network a side channel runs on.
type sideNet interface {
	Listen(addr netip.AddrPort) (net.Listener, error)
	// Dial connects from local (the NIC's address) to remote.
	Dial(ctx context.Context, local netip.Addr, remote netip.AddrPort) (net.Conn, error)
	// Retryable reports whether a failed Dial is worth repeating: the
	// server may not be listening yet.
	Retryable(err error) bool
}

// sideNetOf is the device's own network if it has one, else the kernel's.
func sideNetOf(dev ibv.Device) sideNet {
	if n, ok := dev.(ibv.Network); ok {
		return deviceNet{n}
	}
	return kernelNet{}
}

// kernelNet is kernel TCP.
type kernelNet struct{}

// Listen on the zero address listens on every address of the host.
func (kernelNet) Listen(addr netip.AddrPort) (net.Listener, error) {
	if !addr.Addr().IsValid() {
		return net.Listen("tcp", fmt.Sprintf(":%d", addr.Port()))
	}
	return net.Listen("tcp", addr.String())
}

// Dial binds the client's end to its NIC address, so the server sees the
// address the client's NIC sends from (connect uses it when no GID is
// given).
func (kernelNet) Dial(ctx context.Context, local netip.Addr, remote netip.AddrPort) (net.Conn, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: local.AsSlice()}}
	return d.DialContext(ctx, "tcp", remote.String())
}

func (kernelNet) Retryable(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

// deviceNet is a device's own network (a TAP NIC's TCP, rnicd's stack).
type deviceNet struct{ ibv.Network }

// Retryable: any failure but a cancelled context. A device's TCP reports a
// refused connection in its own words, and the first attempt may also
// fail while the peer's TAP comes up and answers ARP/ND; DialRetry bounds
// the attempts.
func (deviceNet) Retryable(err error) bool {
	return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}
