// A host port for a user other than root (rnic exec's view of a user on a
// root rnicd): the kernel behind it is the user's, who may not do on the
// wire what root may. It speaks only as the NIC: every frame it sends
// carries the NIC's MAC (as any port's) and, for IP and ARP, one of the
// NIC's addresses as its source; and it gets no connection to a
// privileged port of the NIC's addresses (below the host's
// net.ipv4.ip_unprivileged_port_start), which the user could not listen
// on through the daemon either: those stay with the NIC, whose stack
// refuses them.

package tapnic

import (
	"encoding/binary"
	"net/netip"
	"os"
	"strconv"
	"strings"
)

// privilegedPorts is the host's net.ipv4.ip_unprivileged_port_start (1024
// unless changed): ports below it are root's.
func privilegedPorts() uint16 {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_unprivileged_port_start")
	if err != nil {
		return 1024
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || v < 0 || v > 65535 {
		return 1024
	}
	return uint16(v)
}

// userPort reports whether a TCP or UDP packet to the NIC's address may go
// to a user's host port: not to a privileged port.
func (c *classifier) userPort(proto uint8, l4 []byte) bool {
	if !c.user || (proto != protoTCP && proto != protoUDP) || len(l4) < 4 {
		return true
	}
	return binary.BigEndian.Uint16(l4[2:]) >= c.privStart
}

// mayOriginate reports whether a frame a user's host port sends speaks as
// the NIC: an IPv4 or IPv6 packet from one of its addresses (IPv6's
// unspecified source too, for duplicate address detection), an ARP packet
// whose sender is one of its addresses. Anything else is dropped.
func (c *classifier) mayOriginate(f []byte) bool {
	if len(f) < ethLen {
		return false
	}
	switch binary.BigEndian.Uint16(f[12:]) {
	case etherIPv4:
		ip := f[ethLen:]
		return len(ip) >= 20 && ip[0]>>4 == 4 && containsAddr(c.addrs4, netip.AddrFrom4([4]byte(ip[12:16])))
	case etherIPv6:
		ip := f[ethLen:]
		if len(ip) < 40 || ip[0]>>4 != 6 {
			return false
		}
		src := netip.AddrFrom16([16]byte(ip[8:24]))
		return containsAddr(c.addrs6, src) || (src.IsUnspecified() && ip[6] == protoICMPv6)
	case etherARP:
		const senderIPAt = ethLen + 14
		return len(f) >= senderIPAt+4 && containsAddr(c.addrs4, netip.AddrFrom4([4]byte(f[senderIPAt:])))
	}
	return false
}
