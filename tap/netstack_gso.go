// Host segmentation offload for the TCP stack: a link endpoint with
// OutputOffload tells netstack the host segments (stack.HostGSOSupported),
// so its TCP sends super-segments of up to 64 KiB with one header and only
// the pseudo-header sum in the checksum field (pkt.GSOOptions says so), and
// the Host hands them to the kernel behind a virtio_net_hdr
// (host_offload.go) instead of paying a TAP write and a pass through
// netstack per 1460 bytes.

package tap

import (
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

var _ stack.GSOEndpoint = (*linkEndpoint)(nil)

// GSOMaxSize implements stack.GSOEndpoint: the largest packet netstack
// may hand over, an IPv4 packet's limit (0 without offload).
func (l *linkEndpoint) GSOMaxSize() uint32 {
	if !l.gso() {
		return 0
	}
	return gsoMaxPacket
}

// SupportedGSO implements stack.GSOEndpoint.
func (l *linkEndpoint) SupportedGSO() stack.SupportedGSO {
	if !l.gso() {
		return stack.GSONotSupported
	}
	return stack.HostGSOSupported
}

// gso reports whether the Host segments (OutputOffload or OutputFrame).
func (l *linkEndpoint) gso() bool { return l.outputOffload != nil || l.outputFrame != nil }

// FrameHeadroom is the room before each packet handed to
// TCPStackConfig.OutputFrame: an Ethernet header.
const FrameHeadroom = ethHeaderLen

// headroom is the room flatten leaves before a packet.
func (l *linkEndpoint) headroom() int {
	if l.outputFrame != nil {
		return FrameHeadroom
	}
	return 0
}

// send passes one flattened packet of pkt to the Host: b, behind
// headroom.
func (l *linkEndpoint) send(b []byte, pkt *stack.PacketBuffer) error {
	switch {
	case l.outputFrame != nil:
		return l.outputFrame(b, txOffloadOf(pkt.GSOOptions))
	case l.outputOffload != nil:
		return l.outputOffload(b, txOffloadOf(pkt.GSOOptions))
	}
	return l.output(b)
}

// txOffloadOf translates netstack's GSO options of a packet.
func txOffloadOf(g stack.GSO) TxOffload {
	switch g.Type {
	case stack.GSOTCPv4, stack.GSOTCPv6:
	default:
		return TxOffload{} // finished by netstack
	}
	o := TxOffload{MSS: g.MSS, L3HdrLen: g.L3HdrLen}
	if g.NeedsCsum {
		o.NeedsCsum, o.CsumOffset = true, g.CsumOffset
	}
	return o
}
