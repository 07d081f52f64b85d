// Which frames from the wire are the NIC's business and which are the host
// port's (hostport.go). The NIC and the kernel behind the host port share
// one MAC and one set of addresses, as an RNIC shares them with its host's
// network stack: the NIC keeps RoCEv2 (to its addresses and to IP
// multicast groups: multicast UD), what its own TCP stack has an
// endpoint for, and the ARP, ND and ping it answers; the kernel gets the
// rest. Neighbour answers (ARP replies, neighbour advertisements) go to
// both, since both resolve peers.
//
// Only the headers needed to decide are read; a frame too short or too odd
// to decide goes to the NIC, whose receive path counts what is wrong.

package tapnic

import (
	"encoding/binary"
	"net/netip"
)

// Ethernet, IP and protocol numbers (IEEE 802.3, RFC 791, RFC 8200, IANA).
const (
	ethLen        = 14
	etherIPv4     = 0x0800
	etherARP      = 0x0806
	etherIPv6     = 0x86DD
	protoTCP      = 6
	protoUDP      = 17
	protoICMP     = 1
	protoICMPv6   = 58
	icmpEcho      = 8   // ICMP echo request (RFC 792)
	icmp6Echo     = 128 // ICMPv6 echo request (RFC 4443 §4.1)
	icmp6NS       = 135 // neighbour solicitation (RFC 4861 §4.3)
	icmp6NA       = 136 // neighbour advertisement (RFC 4861 §4.4)
	arpOpRequest  = 1
	arpOpReply    = 2
	arpTargetIPAt = ethLen + 24 // ARP for IPv4 over Ethernet (RFC 826): target protocol address
)

// verdict says where a frame from the wire goes.
type verdict uint8

const (
	toNIC  verdict = iota // the NIC's business only
	toPort                // the host port's only
	toBoth                // both (neighbour answers)
)

// classifier decides for one NIC.
type classifier struct {
	mac      [6]byte
	addrs4   []netip.Addr
	addrs6   []netip.Addr // including the link-local address
	rocePort uint16
	tcpOwns  func(ipPacket []byte) bool
	// user: the port is a user's (hostport_user.go): TCP and UDP to
	// ports below privStart stay with the NIC.
	user      bool
	privStart uint16
}

// classify decides where frame goes.
func (c *classifier) classify(f []byte) verdict {
	if len(f) < ethLen {
		return toNIC
	}
	dst := [6]byte(f[0:6])
	if dst != c.mac && dst[0]&1 == 0 {
		return toNIC // unicast for another host, flooded: the NIC drops it
	}
	switch binary.BigEndian.Uint16(f[12:]) {
	case etherIPv4:
		return c.ipv4(f[ethLen:])
	case etherIPv6:
		return c.ipv6(f[ethLen:])
	case etherARP:
		return c.arp(f)
	}
	return toPort // LLDP, VLAN-tagged, anything the NIC has no use for
}

// arp: a request for one of the NIC's addresses is the NIC's to answer;
// replies, and requests for others (from which Linux updates the
// neighbours it knows), go to both.
func (c *classifier) arp(f []byte) verdict {
	if len(f) < arpTargetIPAt+4 {
		return toNIC
	}
	if binary.BigEndian.Uint16(f[ethLen+6:]) == arpOpRequest &&
		containsAddr(c.addrs4, netip.AddrFrom4([4]byte(f[arpTargetIPAt:]))) {
		return toNIC
	}
	return toBoth
}

func (c *classifier) ipv4(ip []byte) verdict {
	if len(ip) < 20 || ip[0]>>4 != 4 {
		return toNIC
	}
	ihl := int(ip[0]&0x0f) * 4
	if ihl < 20 || len(ip) < ihl+4 {
		return toNIC
	}
	fragment := binary.BigEndian.Uint16(ip[6:])&0x3fff != 0
	dst := netip.AddrFrom4([4]byte(ip[16:20]))
	if dst.IsMulticast() && !fragment && c.roce(ip[9], ip[ihl:]) {
		return toNIC // a RoCEv2 datagram to a group (multicast UD)
	}
	if !containsAddr(c.addrs4, dst) {
		return toPort // broadcast, multicast, another address of the kernel's
	}
	if fragment {
		return toPort // a fragment: the NIC reassembles nothing (RoCEv2 sets DF)
	}
	return c.transport(ip, ip[9], ip[ihl:])
}

// roce reports whether an IP payload is a RoCEv2 datagram: UDP to the
// RoCEv2 port. The NIC's receive path drops one to a group it has no QP
// in, as the kernel would have.
func (c *classifier) roce(proto uint8, l4 []byte) bool {
	return proto == protoUDP && binary.BigEndian.Uint16(l4[2:]) == c.rocePort
}

func (c *classifier) ipv6(ip []byte) verdict {
	if len(ip) < 40+4 || ip[0]>>4 != 6 {
		return toNIC
	}
	dst := netip.AddrFrom16([16]byte(ip[24:40]))
	next, l4 := ip[6], ip[40:]
	if dst.IsMulticast() {
		switch {
		case next == protoICMPv6:
			return c.icmp6(l4)
		case c.roce(next, l4):
			return toNIC // a RoCEv2 datagram to a group (multicast UD)
		}
		return toPort // MLD behind a hop-by-hop header, mDNS, ...
	}
	if !containsAddr(c.addrs6, dst) {
		return toPort
	}
	if next == protoICMPv6 {
		return c.icmp6(l4)
	}
	return c.transport(ip, next, l4)
}

// transport decides for a unicast packet to one of the NIC's addresses.
func (c *classifier) transport(ip []byte, proto uint8, l4 []byte) verdict {
	switch proto {
	case protoUDP:
		if binary.BigEndian.Uint16(l4[2:]) == c.rocePort {
			return toNIC
		}
	case protoTCP:
		if c.tcpOwns(ip) {
			return toNIC
		}
	case protoICMP:
		if l4[0] == icmpEcho {
			return toNIC // the NIC answers ping for its addresses
		}
	}
	if !c.userPort(proto, l4) {
		return toNIC
	}
	return toPort
}

// icmp6: neighbour solicitations for the NIC's addresses and echo requests
// are the NIC's to answer, advertisements go to both, the rest (router
// advertisements, MLD, echo replies, errors) to the kernel.
func (c *classifier) icmp6(m []byte) verdict {
	switch m[0] {
	case icmp6Echo:
		return toNIC
	case icmp6NA:
		return toBoth
	case icmp6NS:
		if len(m) >= 24 && containsAddr(c.addrs6, netip.AddrFrom16([16]byte(m[8:24]))) {
			return toNIC
		}
	}
	return toPort
}

func containsAddr(list []netip.Addr, a netip.Addr) bool {
	for _, x := range list {
		if x == a {
			return true
		}
	}
	return false
}
