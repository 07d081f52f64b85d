// The copy of an inbound packet into netstack's memory, laid out so that
// netstack's header reads stay cheap.
//
// netstack's IP receive path holds a reference to the network header's
// view (the View its parser returns) and then reads the header again
// (PacketHeader.Slice). Reading a header whose chunk has a second
// reference makes buffer.Buffer.PullUp clone that whole chunk, cleared
// and copied: for a packet copied into one chunk, every TCP super-segment
// paid a second copy of up to 64 KiB. With the IP header, the TCP header
// and the payload each in a chunk of their own, such a clone copies a
// header only, and the payload is copied once.

package tap

import (
	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// inboundBuffer copies ipPacket (classified by tcpPacketProtocol) into a
// netstack buffer of up to three views: the IP header, the TCP header and
// the payload. A packet too short or odd to split is copied whole; netstack
// validates it either way.
func inboundBuffer(ip []byte) buffer.Buffer {
	l3 := inboundIPHeaderLen(ip)
	if l3 == 0 || len(ip) < l3+header.TCPMinimumSize {
		return buffer.MakeWithData(ip)
	}
	l4 := l3 + int(ip[l3+12]>>4)*4
	if l4 < l3+header.TCPMinimumSize || l4 > len(ip) {
		l4 = l3 // an odd TCP header: netstack refuses it
	}
	// Built back to front: Append would copy a header into the room left
	// in the chunk before it, Prepend finds none before a new view.
	var b buffer.Buffer
	for _, part := range [][]byte{ip[l4:], ip[l3:l4], ip[:l3]} {
		if len(part) > 0 {
			_ = b.Prepend(buffer.NewViewWithData(part)) // fails only on a shared chunk, which a new view is not
		}
	}
	return b
}

// inboundIPHeaderLen is the length of the IP header before a TCP header,
// or 0 where TCP does not follow it directly (an IPv6 fragment) or it is
// malformed.
func inboundIPHeaderLen(ip []byte) int {
	switch header.IPVersion(ip) {
	case header.IPv4Version:
		ihl := int(ip[0]&0x0f) * 4
		if ihl < header.IPv4MinimumSize || ihl > len(ip) {
			return 0
		}
		return ihl
	case header.IPv6Version:
		if header.IPv6(ip).NextHeader() != uint8(header.TCPProtocolNumber) {
			return 0
		}
		return header.IPv6MinimumSize
	}
	return 0
}
