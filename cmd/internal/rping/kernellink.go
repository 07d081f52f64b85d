// The embedded mode's RoCEv2 NIC for rdma_cm: the NIC's kernel UDP socket
// on port 4791, with the capture between the engine and the socket.

package rping

import (
	"fmt"
	"net/netip"

	"github.com/rnic/rnic/nic/embedded"
)

// openKernelNIC opens an embedded-mode NIC on a kernel UDP socket of addr
// (port 4791), with the capture, if any, between the engine and the
// socket: pcap records the frames as the kernel sends them.
func openKernelNIC(addr netip.Addr, pcap *embedded.PcapWriter, cfg *Config) (*embedded.NIC, error) {
	n, err := embedded.Open(embedded.UDPConfig{Name: cfg.Device.Name, Addr: addr, Pcap: pcap, Trace: cfg.Trace})
	if err != nil {
		return nil, fmt.Errorf("rping: open NIC on %v: %w", addr, err)
	}
	return n, nil
}
