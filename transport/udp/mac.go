// Synthetic MAC addresses for the embedded mode.
//
// A kernel UDP socket never shows Ethernet headers, yet the RoCE engine
// speaks whole Ethernet frames and captures need MACs. Both ends of an
// embedded link therefore derive a MAC from an IP address with the same
// rule, so that the frames an engine sends (destination MAC from
// SyntheticMAC of the peer) and the frames this package synthesizes on
// receipt (source MAC from SyntheticMAC of the sender) agree, and a pcap of
// the conversation looks like one consistent Ethernet.

package udp

import "net/netip"

// SyntheticMAC returns the locally administered unicast MAC that stands for
// addr on an embedded-mode link. It is deterministic and readable in
// captures:
//
//   - IPv4 a.b.c.d (or IPv4-mapped IPv6): 02:00:a:b:c:d, so 127.0.0.2 is
//     02:00:7f:00:00:02;
//   - IPv6: 06:h:w:x:y:z, where w:x:y:z are the address's last four bytes and
//     h folds its first twelve (FNV-1a), so ::1 keeps its readable tail while
//     addresses that differ only in their prefix still get different MACs.
//
// The first octet has the locally administered bit set and the group bit
// clear, so these MACs never collide with a vendor's. An invalid address
// gives 02:00:00:00:00:00.
func SyntheticMAC(addr netip.Addr) [6]byte {
	addr = addr.Unmap()
	switch {
	case addr.Is4():
		a := addr.As4()
		return [6]byte{0x02, 0x00, a[0], a[1], a[2], a[3]}
	case addr.Is6():
		a := addr.As16()
		h := uint32(2166136261) // FNV-1a offset basis
		for _, b := range a[:12] {
			h ^= uint32(b)
			h *= 16777619
		}
		fold := byte(h ^ h>>8 ^ h>>16 ^ h>>24)
		return [6]byte{0x06, fold, a[12], a[13], a[14], a[15]}
	}
	return [6]byte{0x02}
}
