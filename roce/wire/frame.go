package wire

import (
	"encoding/binary"
	"net/netip"
)

// A RoCEv2 frame on Ethernet, IBTA Vol 1 Annex A17.4:
//
//	+----------+---------+----------------+-----------+-----------------------+
//	| Ethernet | 802.1Q? | IPv4 or IPv6   | UDP       | BTH ... pad | ICRC    |
//	| 14       | 4       | 20(+opts) / 40 | 8 (→4791) | transport packet      |
//	+----------+---------+----------------+-----------+-----------------------+
//
// IPv4 carries DF and is never fragmented; its header checksum is computed.
// The UDP checksum may be zero over IPv4 (rxe sends zero); over IPv6 a zero
// UDP checksum is illegal (RFC 8200 §8.1) so the encoder computes it. The
// ICRC masks both checksums, TOS/traffic class, flow label and TTL/hop limit
// (icrc.go), so routers may rewrite those.

// Well-known numbers.
const (
	UDPPort       = 4791 // IANA RoCEv2 port
	EtherTypeIPv4 = 0x0800
	EtherTypeIPv6 = 0x86DD
	EtherTypeVLAN = 0x8100
	ipProtoUDP    = 17
	EthLen        = 14
	VLANLen       = 4
	IPv4Len       = 20
	IPv6Len       = 40
	UDPLen        = 8
)

// ChecksumMode chooses how the encoder fills the UDP checksum.
type ChecksumMode uint8

// UDP checksum modes.
const (
	ChecksumAuto    ChecksumMode = iota // zero over IPv4 (as rxe), computed over IPv6
	ChecksumZero                        // always zero (illegal over IPv6, for tests)
	ChecksumCompute                     // always computed
)

// Encap is everything below the BTH: the Ethernet, optional 802.1Q, IP and
// UDP fields of a frame.
type Encap struct {
	DstMAC, SrcMAC [6]byte
	VLAN           bool
	TCI            uint16 // 802.1Q PCP, DEI and VLAN ID
	Src, Dst       netip.Addr
	TOS            uint8  // IPv4 TOS or IPv6 traffic class (DSCP and ECN)
	TTL            uint8  // IPv4 TTL or IPv6 hop limit
	FlowLabel      uint32 // IPv6 only
	IPID           uint16 // IPv4 only
	DF             bool   // IPv4 Don't Fragment; RoCEv2 senders set it
	SrcPort        uint16
	DstPort        uint16 // UDPPort unless configured otherwise
	UDPChecksum    ChecksumMode
}

// IPv6 reports whether the encapsulation is IPv6. An IPv4-mapped IPv6
// address (::ffff:a.b.c.d) means IPv6; use a 4-byte address for IPv4.
func (e *Encap) IPv6() bool { return !e.Src.Is4() }

// EncapLen returns the bytes the encapsulation adds before the BTH.
func (e *Encap) EncapLen() int {
	n := EthLen + UDPLen
	if e.VLAN {
		n += VLANLen
	}
	if e.IPv6() {
		return n + IPv6Len
	}
	return n + IPv4Len
}

// AppendFrame appends a whole frame, headers through ICRC, to dst.
func AppendFrame(dst []byte, e *Encap, h *Headers, payload []byte) []byte {
	start := len(dst)
	hl := e.EncapLen()
	dst = grow(dst, hl)
	dst = AppendPacket(dst, h, payload)
	f := dst[start:]
	e.put(f, len(f)-hl)
	return dst
}

// Seal completes a frame built in place: f holds EncapLen() bytes of room
// followed by a transport packet (BTH through a 4-byte ICRC placeholder), as
// AppendPacket writes it. Seal writes the Ethernet, IP and UDP headers into
// the room and fills in the ICRC and checksums.
func (e *Encap) Seal(f []byte) { e.put(f, len(f)-e.EncapLen()) }

// put writes the encapsulation headers into the front of f, whose transport
// packet (n bytes) is already in place, and seals the frame with its ICRC.
func (e *Encap) put(f []byte, n int) {
	copy(f[0:6], e.DstMAC[:])
	copy(f[6:12], e.SrcMAC[:])
	l3 := EthLen
	if e.VLAN {
		binary.BigEndian.PutUint16(f[12:], EtherTypeVLAN)
		binary.BigEndian.PutUint16(f[14:], e.TCI)
		l3 += VLANLen
	}
	udpLen := UDPLen + n
	var ip []byte
	if e.IPv6() {
		binary.BigEndian.PutUint16(f[l3-2:], EtherTypeIPv6)
		ip = f[l3 : l3+IPv6Len]
		binary.BigEndian.PutUint32(ip, 6<<28|uint32(e.TOS)<<20|e.FlowLabel&0xFFFFF)
		binary.BigEndian.PutUint16(ip[4:], uint16(udpLen))
		ip[6] = ipProtoUDP
		ip[7] = e.TTL
		s, d := e.Src.As16(), e.Dst.As16()
		copy(ip[8:24], s[:])
		copy(ip[24:40], d[:])
	} else {
		binary.BigEndian.PutUint16(f[l3-2:], EtherTypeIPv4)
		ip = f[l3 : l3+IPv4Len]
		ip[0] = 0x45
		ip[1] = e.TOS
		binary.BigEndian.PutUint16(ip[2:], uint16(IPv4Len+udpLen))
		binary.BigEndian.PutUint16(ip[4:], e.IPID)
		ip[6], ip[7] = 0, 0
		if e.DF {
			ip[6] = 0x40
		}
		ip[8] = e.TTL
		ip[9] = ipProtoUDP
		ip[10], ip[11] = 0, 0
		s, d := e.Src.Unmap().As4(), e.Dst.Unmap().As4()
		copy(ip[12:16], s[:])
		copy(ip[16:20], d[:])
		binary.BigEndian.PutUint16(ip[10:], ^onesSum(0, ip))
	}
	udp := f[l3+len(ip) : l3+len(ip)+udpLen]
	binary.BigEndian.PutUint16(udp[0:], e.SrcPort)
	binary.BigEndian.PutUint16(udp[2:], e.DstPort)
	binary.BigEndian.PutUint16(udp[4:], uint16(udpLen))
	udp[6], udp[7] = 0, 0
	pkt := udp[UDPLen:]
	PutICRC(pkt, ICRC(ip, udp, pkt[:len(pkt)-ICRCLen]))
	if e.UDPChecksum == ChecksumCompute || (e.UDPChecksum == ChecksumAuto && len(ip) == IPv6Len) {
		binary.BigEndian.PutUint16(udp[6:], udpChecksum(ip, udp))
	}
}

// Frame is a decoded RoCEv2 frame: offsets and views into the bytes given to
// Decode, plus the transport packet.
type Frame struct {
	b       []byte
	VLAN    bool
	l3, l4  int // IP and UDP header offsets
	end     int // end of the UDP datagram; Ethernet padding may follow
	IPv6    bool
	Packet  Packet
	udpPort uint16
}

// Decode parses b as Ethernet [802.1Q] IPv4/IPv6 UDP RoCEv2. port is the
// RoCEv2 UDP destination port to accept (0 means 4791). The ICRC is not
// checked here: call VerifyICRC. It never allocates.
func (f *Frame) Decode(b []byte, port uint16) error {
	if port == 0 {
		port = UDPPort
	}
	if len(b) < EthLen {
		return ErrTruncated
	}
	et := binary.BigEndian.Uint16(b[12:])
	l3 := EthLen
	vlan := false
	if et == EtherTypeVLAN {
		if len(b) < EthLen+VLANLen {
			return ErrTruncated
		}
		et = binary.BigEndian.Uint16(b[16:])
		l3 += VLANLen
		vlan = true
	}
	var l4, ipEnd int
	switch et {
	case EtherTypeIPv4:
		if len(b) < l3+IPv4Len {
			return ErrTruncated
		}
		ip := b[l3:]
		ihl := int(ip[0]&0x0F) * 4
		tot := int(binary.BigEndian.Uint16(ip[2:]))
		if ip[0]>>4 != 4 || ihl < IPv4Len || tot < ihl {
			return ErrBadIPHeader
		}
		if len(ip) < tot {
			return ErrTruncated
		}
		if binary.BigEndian.Uint16(ip[6:])&0x3FFF != 0 { // MF or fragment offset
			return ErrIPFragment
		}
		if ip[9] != ipProtoUDP {
			return ErrNotUDP
		}
		l4, ipEnd = l3+ihl, l3+tot
	case EtherTypeIPv6:
		if len(b) < l3+IPv6Len {
			return ErrTruncated
		}
		ip := b[l3:]
		if ip[0]>>4 != 6 {
			return ErrBadIPHeader
		}
		if ip[6] != ipProtoUDP {
			return ErrNotUDP
		}
		l4 = l3 + IPv6Len
		ipEnd = l4 + int(binary.BigEndian.Uint16(ip[4:]))
		if len(b) < ipEnd {
			return ErrTruncated
		}
	default:
		return ErrNotIP
	}
	if ipEnd-l4 < UDPLen {
		return ErrTruncated
	}
	udp := b[l4:]
	ulen := int(binary.BigEndian.Uint16(udp[4:]))
	if ulen != ipEnd-l4 {
		return ErrBadUDPLength
	}
	if binary.BigEndian.Uint16(udp[2:]) != port {
		return ErrNotRoCEPort
	}
	if err := f.Packet.Decode(b[l4+UDPLen : ipEnd]); err != nil {
		return err
	}
	f.b, f.VLAN, f.l3, f.l4, f.end, f.IPv6, f.udpPort = b, vlan, l3, l4, ipEnd, et == EtherTypeIPv6, port
	return nil
}

// Seal recomputes the frame's ICRC and, when the UDP checksum is in use
// (non-zero), the UDP checksum, which covers the ICRC. It is for frames
// assembled or rewritten by other means (gopacket serialization, fault
// injection scripts).
func (f *Frame) Seal() {
	PutICRC(f.Packet.b, f.ComputeICRC())
	udp := f.b[f.l4:f.end]
	if binary.BigEndian.Uint16(udp[6:]) != 0 {
		udp[6], udp[7] = 0, 0
		binary.BigEndian.PutUint16(udp[6:], udpChecksum(f.IP(), udp))
	}
}

// Bytes returns the frame as given to Decode.
func (f *Frame) Bytes() []byte { return f.b }

// IP returns the IP header (with IPv4 options, if any).
func (f *Frame) IP() []byte { return f.b[f.l3:f.l4] }

// UDP returns the UDP header.
func (f *Frame) UDP() []byte { return f.b[f.l4 : f.l4+UDPLen] }

// Trailer returns the bytes after the IP datagram (Ethernet padding).
func (f *Frame) Trailer() []byte { return f.b[f.end:] }

// ComputeICRC computes the ICRC the frame should carry.
func (f *Frame) ComputeICRC() uint32 {
	pkt := f.Packet.b
	return ICRC(f.IP(), f.UDP(), pkt[:len(pkt)-ICRCLen])
}

// VerifyICRC reports whether the frame's ICRC is correct.
func (f *Frame) VerifyICRC() bool { return f.ComputeICRC() == f.Packet.WireICRC() }

// SrcAddr and DstAddr return the IP addresses.
func (f *Frame) SrcAddr() netip.Addr { return f.addr(true) }
func (f *Frame) DstAddr() netip.Addr { return f.addr(false) }

func (f *Frame) addr(src bool) netip.Addr {
	ip := f.IP()
	if f.IPv6 {
		o := 24
		if src {
			o = 8
		}
		return netip.AddrFrom16([16]byte(ip[o : o+16]))
	}
	o := 16
	if src {
		o = 12
	}
	return netip.AddrFrom4([4]byte(ip[o : o+4]))
}

// SrcPort returns the UDP source port.
func (f *Frame) SrcPort() uint16 { return binary.BigEndian.Uint16(f.b[f.l4:]) }

// Encap decodes the frame's encapsulation so that AppendFrame can rebuild it.
func (f *Frame) Encap() Encap {
	b, ip, udp := f.b, f.IP(), f.UDP()
	e := Encap{
		VLAN: f.VLAN, Src: f.SrcAddr(), Dst: f.DstAddr(),
		SrcPort: binary.BigEndian.Uint16(udp), DstPort: binary.BigEndian.Uint16(udp[2:]),
		UDPChecksum: ChecksumZero,
	}
	copy(e.DstMAC[:], b[0:6])
	copy(e.SrcMAC[:], b[6:12])
	if f.VLAN {
		e.TCI = binary.BigEndian.Uint16(b[14:])
	}
	if f.IPv6 {
		w := binary.BigEndian.Uint32(ip)
		e.TOS, e.FlowLabel, e.TTL = uint8(w>>20), w&0xFFFFF, ip[7]
	} else {
		e.TOS, e.TTL = ip[1], ip[8]
		e.IPID = binary.BigEndian.Uint16(ip[4:])
		e.DF = ip[6]&0x40 != 0
	}
	if binary.BigEndian.Uint16(udp[6:]) != 0 {
		e.UDPChecksum = ChecksumCompute
	}
	return e
}

// onesSum adds b to a ones'-complement running sum (RFC 1071).
func onesSum(sum uint32, b []byte) uint16 {
	for len(b) >= 2 {
		sum += uint32(b[0])<<8 | uint32(b[1])
		b = b[2:]
	}
	if len(b) == 1 {
		sum += uint32(b[0]) << 8
	}
	for sum > 0xFFFF {
		sum = sum>>16 + sum&0xFFFF
	}
	return uint16(sum)
}

// udpChecksum computes the UDP checksum over the pseudo-header of ip (v4 or
// v6) and the datagram (udp header with zero checksum plus payload).
func udpChecksum(ip, dgram []byte) uint16 {
	var sum uint32
	if ip[0]>>4 == 6 {
		sum = uint32(onesSum(0, ip[8:40]))
	} else {
		sum = uint32(onesSum(0, ip[12:20]))
	}
	sum += ipProtoUDP + uint32(len(dgram))
	c := ^onesSum(sum+uint32(onesSum(0, dgram)), nil)
	if c == 0 {
		c = 0xFFFF // RFC 768: a computed zero is sent as all ones
	}
	return c
}
