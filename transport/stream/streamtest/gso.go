// Segmentation offload as the kernel does it behind a TAP, for the tests
// of a stack that hands its NIC TCP super-segments.

package streamtest

import (
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// CutSuperSegment cuts a TCP super-segment (an IP packet from a stack
// that relies on segmentation offload, its TCP checksum only the pseudo
// header's) into segments of at most mss payload bytes, every mss bytes
// from its start, as the kernel's GSO does: each a copy of the headers
// with its own sequence number, lengths and full checksums; FIN and PSH
// only on the last. It also returns the TCP payload's length.
func CutSuperSegment(pkt []byte, mss int) (segs [][]byte, payload int) {
	var l3 int
	var src, dst tcpip.Address
	if header.IPVersion(pkt) == header.IPv4Version {
		ip := header.IPv4(pkt)
		l3, src, dst = int(ip.HeaderLength()), ip.SourceAddress(), ip.DestinationAddress()
	} else {
		ip := header.IPv6(pkt)
		l3, src, dst = header.IPv6MinimumSize, ip.SourceAddress(), ip.DestinationAddress()
	}
	super := header.TCP(pkt[l3:])
	hl := l3 + int(super.DataOffset())
	data := pkt[hl:]
	for off := 0; off == 0 || off < len(data); off += mss {
		n := min(mss, len(data)-off)
		b := append(append([]byte(nil), pkt[:hl]...), data[off:off+n]...)
		tcp := header.TCP(b[l3:])
		tcp.SetSequenceNumber(super.SequenceNumber() + uint32(off))
		if off+n < len(data) {
			tcp.SetFlags(uint8(super.Flags() &^ (header.TCPFlagFin | header.TCPFlagPsh)))
		}
		if l3 == header.IPv6MinimumSize {
			header.IPv6(b).SetPayloadLength(uint16(len(b) - l3))
		} else {
			ip := header.IPv4(b)
			ip.SetTotalLength(uint16(len(b)))
			ip.SetChecksum(0)
			ip.SetChecksum(^ip.CalculateChecksum())
		}
		tcp.SetChecksum(0)
		sum := header.PseudoHeaderChecksum(header.TCPProtocolNumber, src, dst, uint16(len(b)-l3))
		tcp.SetChecksum(^tcp.CalculateChecksum(checksum.Checksum(b[hl:], sum)))
		segs = append(segs, b)
	}
	return segs, len(data)
}
