// Rebuilding the frame a datagram arrived in.
//
// A kernel socket delivers only the UDP payload, plus the addresses, ports,
// TOS/traffic class and TTL/hop limit as ancillary data. The engine wants
// the whole Ethernet/IP/UDP frame, and the RoCEv2 ICRC covers the IP and UDP
// headers, so they must be rebuilt exactly as they were on the wire. Between
// rnic endpoints they can be: the sender's socket sends IPv4 with DF, ID 0
// and no options, UDP checksum 0 over IPv4 (SO_NO_CHECK), IPv6 without
// extension headers; the fields a kernel could choose differently (TOS,
// TTL, checksums, flow label) are the ones the ICRC masks, and the received
// values of the first two are used anyway. The Ethernet header gets
// synthetic MACs (mac.go).
//
// Headers are written in place, in the room the receive buffer keeps in
// front of every payload, so building a frame copies nothing.

package udp

import (
	"encoding/binary"
	"net/netip"
)

// hdrRoom is the room kept in front of each received payload: the largest
// header synthesize writes (Ethernet, IPv6, UDP).
const hdrRoom = ethLen + ipv6Len + udpLen

// arrival is what the kernel told about one received datagram.
type arrival struct {
	v6               bool
	src, dst         [16]byte // IPv4 in the first four bytes
	srcPort, dstPort uint16
	tos              uint8 // IPv4 TOS or IPv6 traffic class
	ttl              uint8 // IPv4 TTL or IPv6 hop limit
	flowLabel        uint32
}

// headerLen returns how many header bytes synthesize puts before the payload.
func (a *arrival) headerLen() int {
	if a.v6 {
		return ethLen + ipv6Len + udpLen
	}
	return ethLen + ipv4Len + udpLen
}

// synthesize writes the Ethernet, IP and UDP headers of a datagram whose
// payload is slot[hdrRoom:hdrRoom+n] into the bytes just before it and
// returns the whole frame, a subslice of slot. dstMAC is the receiving
// endpoint's MAC, srcMAC the sender's synthetic one.
func synthesize(slot []byte, n int, a *arrival, dstMAC, srcMAC [6]byte) []byte {
	start := hdrRoom - a.headerLen()
	f := slot[start : hdrRoom+n]
	copy(f[0:6], dstMAC[:])
	copy(f[6:12], srcMAC[:])
	dgramLen := udpLen + n
	var ip []byte
	if a.v6 {
		binary.BigEndian.PutUint16(f[12:], etherTypeIPv6)
		ip = f[ethLen : ethLen+ipv6Len]
		binary.BigEndian.PutUint32(ip, 6<<28|uint32(a.tos)<<20|a.flowLabel&0xFFFFF)
		binary.BigEndian.PutUint16(ip[4:], uint16(dgramLen))
		ip[6] = protoUDP
		ip[7] = a.ttl
		copy(ip[8:24], a.src[:])
		copy(ip[24:40], a.dst[:])
	} else {
		binary.BigEndian.PutUint16(f[12:], etherTypeIPv4)
		ip = f[ethLen : ethLen+ipv4Len]
		ip[0] = 0x45
		ip[1] = a.tos
		binary.BigEndian.PutUint16(ip[2:], uint16(ipv4Len+dgramLen))
		binary.BigEndian.PutUint32(ip[4:], 0x00004000) // ID 0, DF, offset 0
		ip[8] = a.ttl
		ip[9] = protoUDP
		ip[10], ip[11] = 0, 0
		copy(ip[12:16], a.src[:4])
		copy(ip[16:20], a.dst[:4])
		binary.BigEndian.PutUint16(ip[10:], ^fold(sum16(0, ip)))
	}
	udp := f[len(f)-dgramLen:]
	binary.BigEndian.PutUint16(udp[0:], a.srcPort)
	binary.BigEndian.PutUint16(udp[2:], a.dstPort)
	binary.BigEndian.PutUint16(udp[4:], uint16(dgramLen))
	udp[6], udp[7] = 0, 0 // IPv4: no checksum, as the sender's SO_NO_CHECK socket sent it
	if a.v6 {
		// RFC 8200 §8.1: mandatory over IPv6. Pseudo-header: addresses,
		// upper-layer length, next header.
		s := sum16(0, ip[8:40])
		s += uint32(dgramLen) + protoUDP
		c := ^fold(sum16(s, udp))
		if c == 0 {
			c = 0xFFFF // RFC 768: a computed zero is sent as all ones
		}
		binary.BigEndian.PutUint16(udp[6:], c)
	}
	return f
}

// sum16 adds b, as big-endian 16-bit words (an odd last byte padded with
// zero), to the ones'-complement accumulator s without folding.
func sum16(s uint32, b []byte) uint32 {
	// Sum 32-bit words into a 64-bit accumulator: half the iterations of a
	// 16-bit loop, and a 64 KiB datagram cannot overflow it.
	acc := uint64(s)
	for len(b) >= 4 {
		acc += uint64(binary.BigEndian.Uint32(b))
		b = b[4:]
	}
	if len(b) >= 2 {
		acc += uint64(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		acc += uint64(b[0]) << 8
	}
	for acc>>32 != 0 {
		acc = acc>>32 + acc&0xFFFFFFFF
	}
	return uint32(acc>>16) + uint32(acc)&0xFFFF // at most 17 bits; fold finishes
}

// fold reduces a ones'-complement accumulator to 16 bits.
func fold(s uint32) uint16 {
	for s > 0xFFFF {
		s = s>>16 + s&0xFFFF
	}
	return uint16(s)
}

// addrOf returns the address held in b: its first four bytes for IPv4.
func addrOf(v6 bool, b *[16]byte) netip.Addr {
	if v6 {
		return netip.AddrFrom16(*b)
	}
	return netip.AddrFrom4([4]byte(b[:4]))
}
