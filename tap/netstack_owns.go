// Owns: whether a TCP packet belongs to the stack, asked before it is
// delivered. Where another TCP shares the NIC's addresses (a host port's
// kernel, nic/tapnic/hostport.go), a segment no endpoint of netstack wants
// must go there instead: delivered, netstack would answer it with a RST
// and break the other stack's connection.

package tap

import (
	"encoding/binary"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// Owns reports whether ipPacket, an IPv4 or IPv6 packet carrying TCP (no
// IPv6 extension headers), is for an endpoint of the stack: a connection
// (in any state, TIME_WAIT included) or a listener its destination
// matches. It reads the addresses and ports only, and allocates nothing.
func (t *TCPStack) Owns(ipPacket []byte) bool {
	var id stack.TransportEndpointID
	var proto tcpip.NetworkProtocolNumber
	var l4 []byte
	switch {
	case len(ipPacket) >= ipv4HeaderLen && ipPacket[0]>>4 == 4:
		ihl := int(ipPacket[0]&0x0f) * 4
		if ihl < ipv4HeaderLen || len(ipPacket) < ihl+4 {
			return false
		}
		proto, l4 = header.IPv4ProtocolNumber, ipPacket[ihl:]
		id.RemoteAddress = tcpip.AddrFrom4([4]byte(ipPacket[12:16]))
		id.LocalAddress = tcpip.AddrFrom4([4]byte(ipPacket[16:20]))
	case len(ipPacket) >= ipv6HeaderLen+4 && ipPacket[0]>>4 == 6:
		proto, l4 = header.IPv6ProtocolNumber, ipPacket[ipv6HeaderLen:]
		id.RemoteAddress = tcpip.AddrFrom16([16]byte(ipPacket[8:24]))
		id.LocalAddress = tcpip.AddrFrom16([16]byte(ipPacket[24:40]))
	default:
		return false
	}
	id.RemotePort = binary.BigEndian.Uint16(l4[0:])
	id.LocalPort = binary.BigEndian.Uint16(l4[2:])
	return t.s.FindTransportEndpoint(proto, header.TCPProtocolNumber, id, tcpStackNIC) != nil
}
