// Reading the frames the engine sends.
//
// The engine hands over whole Ethernet/IP/UDP frames; a kernel socket takes
// a UDP payload, a destination and a few per-packet options, and writes the
// IP and UDP headers itself. This file checks that a frame's headers are
// ones the kernel will reproduce exactly (what crossed the kernel must equal
// what the engine built, or the peer's reconstructed header, and with it
// the RoCEv2 ICRC, would not match) and extracts what the socket needs. It
// reads the Ethernet, IP and UDP headers only: the payload, BTH to ICRC,
// stays opaque (transport does not interpret RDMA headers).

package udp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
)

// ErrMalformed is returned (wrapped) by Send for a frame that is not a
// well-formed Ethernet/IPv4-or-IPv6/UDP frame.
var ErrMalformed = errors.New("udp: outgoing frame is not Ethernet/IP/UDP")

// ErrUnrepresentable is returned (wrapped) by Send for a well-formed frame
// that a kernel UDP socket of this endpoint cannot put on the wire as it is:
// an 802.1Q tag, IPv4 options or IPv6 extension headers, IPv4 without DF or
// with a non-zero ID (the socket sends DF and ID 0, which is what the
// receiver assumes), a zero TTL or hop limit, or a source address (or
// family) other than the endpoint's.
var ErrUnrepresentable = errors.New("udp: outgoing frame cannot be sent as built through a kernel socket")

// Header sizes and numbers.
const (
	ethLen        = 14
	ipv4Len       = 20
	ipv6Len       = 40
	udpLen        = 8
	etherTypeIPv4 = 0x0800
	etherTypeIPv6 = 0x86DD
	etherTypeVLAN = 0x8100
	protoUDP      = 17
)

// outgoing is what a socket needs to send one frame.
type outgoing struct {
	v6               bool
	dst              [16]byte // IPv4 in the first four bytes
	srcPort, dstPort uint16
	tos              uint8 // IPv4 TOS or IPv6 traffic class
	ttl              uint8 // IPv4 TTL or IPv6 hop limit
	flowLabel        uint32
	udpOff           int    // offset of the UDP header in the frame
	payload          []byte // the UDP payload: BTH through ICRC
}

// parseOutgoing checks frame against what local's sockets can send and
// extracts the socket-level view of it. It does not allocate unless it
// fails.
func parseOutgoing(frame []byte, local netip.Addr) (outgoing, error) {
	var o outgoing
	if len(frame) < ethLen {
		return o, fmt.Errorf("%w: %d bytes, shorter than an Ethernet header", ErrMalformed, len(frame))
	}
	var ipEnd int
	switch et := binary.BigEndian.Uint16(frame[12:]); et {
	case etherTypeIPv4:
		ip := frame[ethLen:]
		if len(ip) < ipv4Len || ip[0]>>4 != 4 {
			return o, fmt.Errorf("%w: bad IPv4 header", ErrMalformed)
		}
		ihl := int(ip[0]&0x0F) * 4
		tot := int(binary.BigEndian.Uint16(ip[2:]))
		switch {
		case ihl < ipv4Len || tot < ihl || tot > len(ip):
			return o, fmt.Errorf("%w: IPv4 header length %d, total length %d, %d bytes present", ErrMalformed, ihl, tot, len(ip))
		case ip[9] != protoUDP:
			return o, fmt.Errorf("%w: IP protocol %d", ErrMalformed, ip[9])
		case ihl != ipv4Len:
			return o, fmt.Errorf("%w: IPv4 options", ErrUnrepresentable)
		case binary.BigEndian.Uint16(ip[6:]) != 0x4000:
			return o, fmt.Errorf("%w: IPv4 flags/fragment %#04x (a socket sends DF, not fragmented)", ErrUnrepresentable, binary.BigEndian.Uint16(ip[6:]))
		case binary.BigEndian.Uint16(ip[4:]) != 0:
			return o, fmt.Errorf("%w: IPv4 ID %d (a socket sends 0)", ErrUnrepresentable, binary.BigEndian.Uint16(ip[4:]))
		case ip[8] == 0:
			return o, fmt.Errorf("%w: TTL 0", ErrUnrepresentable)
		case !local.Is4() || local.As4() != [4]byte(ip[12:16]):
			return o, fmt.Errorf("%w: source %v, endpoint address %v", ErrUnrepresentable, netip.AddrFrom4([4]byte(ip[12:16])), local)
		}
		o.tos, o.ttl = ip[1], ip[8]
		copy(o.dst[:4], ip[16:20])
		o.udpOff, ipEnd = ethLen+ipv4Len, ethLen+tot
	case etherTypeIPv6:
		ip := frame[ethLen:]
		if len(ip) < ipv6Len || ip[0]>>4 != 6 {
			return o, fmt.Errorf("%w: bad IPv6 header", ErrMalformed)
		}
		plen := int(binary.BigEndian.Uint16(ip[4:]))
		w := binary.BigEndian.Uint32(ip)
		switch {
		case ipv6Len+plen > len(ip):
			return o, fmt.Errorf("%w: IPv6 payload length %d, %d bytes present", ErrMalformed, plen, len(ip)-ipv6Len)
		case ip[6] != protoUDP:
			// Extension headers before UDP would need IPV6_*OPTS
			// ancillary data; the engine never builds them.
			return o, fmt.Errorf("%w: IPv6 next header %d, not UDP", ErrMalformed, ip[6])
		case ip[7] == 0:
			return o, fmt.Errorf("%w: hop limit 0", ErrUnrepresentable)
		case !local.Is6() || local.As16() != [16]byte(ip[8:24]):
			return o, fmt.Errorf("%w: source %v, endpoint address %v", ErrUnrepresentable, netip.AddrFrom16([16]byte(ip[8:24])), local)
		}
		o.v6 = true
		o.tos, o.flowLabel, o.ttl = uint8(w>>20), w&0xFFFFF, ip[7]
		copy(o.dst[:], ip[24:40])
		o.udpOff, ipEnd = ethLen+ipv6Len, ethLen+ipv6Len+plen
	case etherTypeVLAN:
		return o, fmt.Errorf("%w: 802.1Q tag", ErrUnrepresentable)
	default:
		return o, fmt.Errorf("%w: EtherType %#04x", ErrMalformed, et)
	}
	if ipEnd-o.udpOff < udpLen {
		return o, fmt.Errorf("%w: no room for a UDP header", ErrMalformed)
	}
	udp := frame[o.udpOff:ipEnd]
	if int(binary.BigEndian.Uint16(udp[4:])) != len(udp) {
		return o, fmt.Errorf("%w: UDP length %d, IP says %d", ErrMalformed, binary.BigEndian.Uint16(udp[4:]), len(udp))
	}
	o.srcPort, o.dstPort = binary.BigEndian.Uint16(udp), binary.BigEndian.Uint16(udp[2:])
	if o.srcPort == 0 || o.dstPort == 0 {
		return o, fmt.Errorf("%w: UDP port 0", ErrMalformed)
	}
	o.payload = udp[udpLen:]
	return o, nil
}
