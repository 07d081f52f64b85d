package decode

import (
	"encoding/binary"
	"net/netip"

	"github.com/rnic/rnic/roce/wire"
)

// l4 is what a lenient walk of Ethernet, one optional 802.1Q tag, IPv4 or
// IPv6 and UDP finds in a frame: enough to tell a frame meant for the RoCEv2
// port from other traffic, and to name its endpoints, even when roce/wire
// rejects it (truncated, fragmented, inconsistent lengths). Only the bytes
// present are read.
type l4 struct {
	vlan     int // VLAN ID, -1 when untagged
	src, dst netip.Addr
	udp      bool // a UDP header (its ports at least) is present
	sport    uint16
	dport    uint16
}

func classify(b []byte) l4 {
	r := l4{vlan: -1}
	if len(b) < wire.EthLen {
		return r
	}
	et := binary.BigEndian.Uint16(b[12:])
	off := wire.EthLen
	if et == wire.EtherTypeVLAN {
		if len(b) < off+wire.VLANLen {
			return r
		}
		r.vlan = int(binary.BigEndian.Uint16(b[14:]) & 0x0FFF)
		et = binary.BigEndian.Uint16(b[16:])
		off += wire.VLANLen
	}
	ip := b[off:]
	var udp []byte
	switch et {
	case wire.EtherTypeIPv4:
		if len(ip) < wire.IPv4Len || ip[0]>>4 != 4 {
			return r
		}
		r.src, r.dst = netip.AddrFrom4([4]byte(ip[12:16])), netip.AddrFrom4([4]byte(ip[16:20]))
		ihl := int(ip[0]&0x0F) * 4
		// A non-first fragment carries no UDP header.
		if ip[9] != 17 || ihl < wire.IPv4Len || binary.BigEndian.Uint16(ip[6:])&0x1FFF != 0 || len(ip) < ihl {
			return r
		}
		udp = ip[ihl:]
	case wire.EtherTypeIPv6:
		if len(ip) < wire.IPv6Len || ip[0]>>4 != 6 {
			return r
		}
		r.src, r.dst = netip.AddrFrom16([16]byte(ip[8:24])), netip.AddrFrom16([16]byte(ip[24:40]))
		if ip[6] != 17 {
			return r
		}
		udp = ip[wire.IPv6Len:]
	default:
		return r
	}
	if len(udp) < 4 {
		return r
	}
	r.udp = true
	r.sport, r.dport = binary.BigEndian.Uint16(udp), binary.BigEndian.Uint16(udp[2:])
	return r
}
