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
	"fmt"

	"github.com/rnic/rnic/cmd/internal/progkit"
	"github.com/rnic/rnic/nic"
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
		return kit.OpenDevice(r.spec, func(dev ibv.Device) error { return r.resolveDevice(ctx, dev) })
	}
	name := r.spec.Name
	if r.TAP != nil {
		tc := progkit.TAPConfig(*r.TAP, name, r.Pcap, r.Trace)
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
	return n.Verbs(nic.IBVOptions{}), nil
}

// openTAPHost opens a NIC in the TAP mode; tests replace it.
var openTAPHost = func(cfg tapnic.Config) (ibv.Device, error) {
	n, err := tapnic.Open(cfg)
	if err != nil {
		return nil, err
	}
	return n.NIC.Verbs(nic.IBVOptions{Network: n.Network(), Close: n.Close}), nil
}
