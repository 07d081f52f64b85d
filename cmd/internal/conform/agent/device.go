package agent

import (
	"fmt"
	"net/netip"

	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rdmacm"
	"github.com/rnic/rnic/nic/tapnic"
	"github.com/rnic/rnic/transport/pcap"
)

// DeviceOptions say which device the agent drives.
type DeviceOptions struct {
	// Device is a device string (ibv.ParseSpec): NAME for a NIC of this
	// process, NAME@SOCKET for rnicd's, verbs:NAME for libibverbs'.
	Device string
	// Addr and Port place a NIC of this process (the embedded mode:
	// kernel UDP sockets on Addr, RoCEv2 on Port, 4791 if zero).
	Addr netip.Addr
	Port uint16
	// Pcap, if set, records the frames of a NIC of this process.
	Pcap *pcap.Writer
	// IWARP makes a NIC of this process an iWARP NIC (MPA over kernel
	// TCP on Addr) instead of RoCEv2.
	IWARP bool
	// TAP, if set, puts the NIC of this process on a TAP device (root)
	// instead of UDP sockets.
	TAP *tapnic.Config
}

// localLinkMTU is the link MTU of the agent's own NIC: jumbo frames on
// loopback, so path MTUs up to 4096 are available.
const localLinkMTU = 9000

// OpenDevice opens the DUT.
func OpenDevice(o DeviceOptions) (ibv.Device, error) {
	spec, err := ibv.ParseSpec(o.Device)
	if err != nil {
		return nil, err
	}
	if spec.Backend != ibv.BackendLocal {
		return ibv.Open(spec)
	}
	if o.TAP != nil {
		return openTAP(spec.Name, o)
	}
	if !o.Addr.IsValid() {
		return nil, fmt.Errorf("agent: the NIC %s needs an address", spec.Name)
	}
	if o.IWARP {
		n, err := embedded.OpenIWARP(embedded.IWARPConfig{Name: spec.Name, Addr: o.Addr, Pcap: o.Pcap})
		if err != nil {
			return nil, fmt.Errorf("agent: %w", err)
		}
		return n.Verbs(nic.IBVOptions{}), nil
	}
	n, err := embedded.Open(embedded.UDPConfig{Name: spec.Name, Addr: o.Addr, Port: o.Port, MTU: localLinkMTU, Pcap: o.Pcap})
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	// rdma_cm on the NIC's QP1, as on rxe: the rdma_cm cases connect
	// through it.
	d, err := rdmacm.Local(n, rdmacm.Config{})
	if err != nil {
		n.Close()
		return nil, fmt.Errorf("agent: %w", err)
	}
	return d, nil
}

func openTAP(name string, o DeviceOptions) (ibv.Device, error) {
	cfg := *o.TAP
	if cfg.Name == "" {
		cfg.Name = name
	}
	if cfg.Pcap == nil {
		cfg.Pcap = o.Pcap
	}
	n, err := tapnic.Open(cfg)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	d, err := rdmacm.LocalWith(n.NIC, rdmacm.Config{}, nic.IBVOptions{Network: n.Network(), Close: n.Close})
	if err != nil {
		n.Close()
		return nil, fmt.Errorf("agent: %w", err)
	}
	return d, nil
}
