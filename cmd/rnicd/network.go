// What each served NIC offers its clients besides verbs: the TCP/IP stack
// that owns its addresses (side channels: a TAP NIC's own gVisor TCP, a
// UDP NIC's kernel TCP on its address) and rdma_cm on its QP1, one CM for
// all clients.

package main

import (
	"fmt"
	"os"

	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rdmacm"
	"github.com/rnic/rnic/nic/rnicd/server"
	"github.com/rnic/rnic/nic/tapnic"
)

// servedDevice returns the NIC as the server serves it: verbs, its
// network, rdma_cm. Closing it closes the CM, then the NIC with closeNIC.
func servedDevice(en *embedded.NIC, tap *tapnic.NIC, closeNIC func() error) (ibv.Device, error) {
	opt := nic.IBVOptions{Network: server.KernelNetwork(en.Addr), Close: closeNIC}
	if tap != nil {
		opt.Network = tap.Network()
		opt.Counters = withFaultCounters(func() []ibv.Counter { return append(en.PortCounters(), tap.HostPortCounters()...) },
			tap.FaultCounters)
	}
	dev, err := rdmacm.LocalWith(en, rdmacm.Config{}, opt)
	if err != nil {
		return nil, fmt.Errorf("%s: rdma_cm: %w", en.Name(), err)
	}
	return dev, nil
}

// hostPorts are the running TAP-mode NICs' host ports (rnic exec's view
// hands each its TAP): the other NICs have no wire to share.
func (d *daemon) hostPorts() map[string]server.HostPortFunc {
	m := map[string]server.HostPortFunc{}
	for _, dev := range d.running {
		if dev.tap == nil {
			continue
		}
		n, mtu := dev.tap, dev.spec.MTU
		if mtu == 0 {
			mtu = 1500
		}
		prefixes := dev.spec.Prefixes
		m[dev.dev.Name()] = func(f *os.File, user bool) (server.HostPort, error) {
			attach := n.AttachHostPort
			if user {
				attach = n.AttachUserHostPort
			}
			p, err := attach(f)
			if err != nil {
				return server.HostPort{}, err
			}
			return server.HostPort{MAC: n.Host().MAC(), MTU: mtu, Prefixes: prefixes, Detach: p}, nil
		}
	}
	return m
}
