// Opening the NIC of one side: in the embedded mode a kernel UDP socket on
// the NIC's address (embedded.Open); on a given link (tests) the same NIC
// with the synthetic MACs the embedded mode uses.

package pingpong

import (
	"fmt"
	"io"
	"net/netip"

	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/transport"
)

// linkMTU is the Ethernet MTU the NIC is given: jumbo frames, so that every
// path MTU up to 4096 is available (the active MTU is the largest IB MTU ≤
// link MTU − 80). Loopback carries 64 KiB datagrams, and peers on a real
// network agree on the path MTU through -m anyway.
const linkMTU = 9000

// openNIC opens a NIC named name on addr, listening on the RoCEv2 port;
// its peers listen on the same port. With link nil it is the embedded
// mode's UDP endpoint. On failure the link is closed.
func openNIC(name string, addr netip.Addr, port uint16, link transport.Endpoint, pcap *transport.PcapWriter, trace io.Writer) (*embedded.NIC, error) {
	n, err := embedded.Open(embedded.UDPConfig{Name: name, Addr: addr, Port: port, MTU: linkMTU, Pcap: pcap, Trace: trace, Link: link})
	if err != nil {
		return nil, fmt.Errorf("pingpong: open NIC on %v: %w", addr, err)
	}
	return n, nil
}
