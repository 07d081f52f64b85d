// The embedded mode's RoCEv2 NIC for rdma_cm: the NIC's kernel UDP socket
// on port 4791, with the capture between the engine and the socket.

package rping

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/roce/wire"
	"github.com/rnic/rnic/transport"
	"github.com/rnic/rnic/transport/udp"
)

// openKernelNIC opens an embedded-mode NIC on a kernel UDP socket of addr
// (port 4791), with the capture, if any, between the engine and the
// socket: pcap records the frames as the kernel sends them.
func openKernelNIC(addr netip.Addr, pcap *transport.PcapWriter, cfg *Config) (*embedded.NIC, error) {
	ep, err := udp.Open(udp.Config{Addr: addr, Port: wire.UDPPort,
		// A frame that leaves from the main socket changes its UDP
		// source port, which the ICRC covers (embedded.Open's rule).
		Reseal: func(b []byte) {
			var f wire.Frame
			if f.Decode(b, 0) == nil {
				f.Seal()
			}
		}})
	if err != nil {
		return nil, fmt.Errorf("rping: open NIC on %v: %w", addr, err)
	}
	var link transport.Endpoint = ep
	if pcap != nil {
		link = transport.Tee(link, pcap, time.Now)
	}
	// UDPConfig.Link keeps the embedded mode's synthetic MACs and port;
	// Open closes the link if the NIC cannot be built.
	n, err := embedded.Open(embedded.UDPConfig{Name: cfg.Device.Name, Addr: ep.Addr(), Link: link, Trace: cfg.Trace})
	if err != nil {
		return nil, fmt.Errorf("rping: open NIC on %v: %w", addr, err)
	}
	return n, nil
}
