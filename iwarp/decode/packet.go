package decode

import (
	"encoding/binary"
	"net/netip"
)

// segment is what a lenient walk of Ethernet, up to two VLAN tags, IPv4 or
// IPv6 (with its common extension headers) and TCP finds in a frame. Only
// the bytes present are read; nothing is trusted.
type segment struct {
	vlan     int // outermost VLAN ID, -1 when untagged
	src, dst netip.AddrPort
	seq, ack uint32
	flags    uint8
	payload  []byte // the captured payload, Ethernet padding removed
	missing  int    // payload octets the capture cut off (snap length)
}

// TCP flags.
const (
	tcpFIN = 0x01
	tcpSYN = 0x02
	tcpRST = 0x04
	tcpACK = 0x10
)

const (
	ethLen        = 14
	etherTypeIPv4 = 0x0800
	etherTypeIPv6 = 0x86DD
	etherTypeVLAN = 0x8100
	etherTypeQinQ = 0x88A8
	ipv4Len       = 20
	ipv6Len       = 40
	tcpLen        = 20
	protoTCP      = 6
)

// parseTCP finds the TCP segment in an Ethernet frame; ok is false for any
// other frame, an IP fragment (whose TCP data is then missing from its
// stream, which reports the gap), or headers cut short.
func parseTCP(b []byte) (s segment, ok bool) {
	s.vlan = -1
	if len(b) < ethLen {
		return s, false
	}
	et := binary.BigEndian.Uint16(b[12:])
	off := ethLen
	for range 2 {
		if et != etherTypeVLAN && et != etherTypeQinQ {
			break
		}
		if len(b) < off+4 {
			return s, false
		}
		if s.vlan < 0 {
			s.vlan = int(binary.BigEndian.Uint16(b[off:]) & 0x0FFF)
		}
		et = binary.BigEndian.Uint16(b[off+2:])
		off += 4
	}
	ip := b[off:]
	var tcp []byte
	var src, dst netip.Addr
	var l4len int // TCP header and payload length by the IP header
	switch et {
	case etherTypeIPv4:
		if len(ip) < ipv4Len || ip[0]>>4 != 4 || ip[9] != protoTCP {
			return s, false
		}
		ihl := int(ip[0]&0x0F) * 4
		total := int(binary.BigEndian.Uint16(ip[2:]))
		// MF set or a fragment offset: not a whole segment.
		if ihl < ipv4Len || len(ip) < ihl || total < ihl || binary.BigEndian.Uint16(ip[6:])&0x3FFF != 0 {
			return s, false
		}
		src, dst = netip.AddrFrom4([4]byte(ip[12:16])), netip.AddrFrom4([4]byte(ip[16:20]))
		tcp, l4len = ip[ihl:], total-ihl
	case etherTypeIPv6:
		if len(ip) < ipv6Len || ip[0]>>4 != 6 {
			return s, false
		}
		src, dst = netip.AddrFrom16([16]byte(ip[8:24])), netip.AddrFrom16([16]byte(ip[24:40]))
		next, rest, plen := ip[6], ip[ipv6Len:], int(binary.BigEndian.Uint16(ip[4:]))
		for range 8 {
			if next == protoTCP {
				break
			}
			// Hop-by-hop, routing and destination options; a fragment
			// header (44) or anything else ends the walk.
			if next != 0 && next != 43 && next != 60 || len(rest) < 8 {
				return s, false
			}
			n := 8 + int(rest[1])*8
			if len(rest) < n || plen < n {
				return s, false
			}
			next, rest, plen = rest[0], rest[n:], plen-n
		}
		if next != protoTCP {
			return s, false
		}
		tcp, l4len = rest, plen
	default:
		return s, false
	}
	if len(tcp) < tcpLen {
		return s, false
	}
	doff := int(tcp[12]>>4) * 4
	if doff < tcpLen || len(tcp) < doff || l4len < doff {
		return s, false
	}
	s.src = netip.AddrPortFrom(src, binary.BigEndian.Uint16(tcp))
	s.dst = netip.AddrPortFrom(dst, binary.BigEndian.Uint16(tcp[2:]))
	s.seq, s.ack = binary.BigEndian.Uint32(tcp[4:]), binary.BigEndian.Uint32(tcp[8:])
	s.flags = tcp[13]
	s.payload = tcp[doff:min(len(tcp), l4len)]
	s.missing = l4len - doff - len(s.payload)
	return s, true
}
