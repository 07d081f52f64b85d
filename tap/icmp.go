// ICMP (RFC 792) and ICMPv6 (RFC 4443): echo replies, so that `ping`
// works against the NIC's addresses, and port unreachables for UDP to
// anything but the RoCE port, rate limited as Linux's icmp_ratelimit does.
// ICMPv6 messages are dispatched here; ND has its own file (ndp.go).
//
// Echo request/reply (RFC 792 p.14, RFC 4443 §4.1/§4.2):
//
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|     Type      |     Code 0    |          Checksum             |
//	|           Identifier          |        Sequence Number        |
//	|     Data ...
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
//	ICMP:   request 8, reply 0;   checksum over the message.
//	ICMPv6: request 128, reply 129; checksum also over the pseudo-header.
//
// Destination unreachable (RFC 792 p.4, RFC 4443 §3.1): type 3 code 3
// (ICMP) / type 1 code 4 (ICMPv6), 4 unused bytes, then as much of the
// offending packet as keeps the reply within 576 bytes (RFC 1812 §4.3.2.3)
// / 1280 bytes (RFC 4443 §2.4 c).

package tap

import (
	"encoding/binary"
	"net/netip"
	"time"

	"github.com/rnic/rnic/transport/clock"
)

const (
	icmpEchoReply       = 0
	icmpDestUnreachable = 3
	icmpEchoRequest     = 8
	icmpPortUnreachable = 3 // code

	icmpv6DestUnreachable = 1
	icmpv6PortUnreachable = 4 // code
	icmpv6EchoRequest     = 128
	icmpv6EchoReply       = 129

	icmpHeaderLen = 8
	replyTTL      = 64 // Linux's default ip_default_ttl / hop_limit

	icmpv4ErrorMax = 576  // RFC 1812 §4.3.2.3
	icmpv6ErrorMax = 1280 // RFC 4443 §2.4 (c): the IPv6 minimum MTU

	// The port unreachable budget: a burst of icmpBurst, refilled at
	// icmpRate per second.
	icmpBurst = 10
	icmpRate  = 10
)

// handleICMPv4 answers echo requests to our address; other ICMP is
// counted and ignored. ip is trimmed to its total length.
func (h *Host) handleICMPv4(frame, ip []byte, ihl int) {
	icmp := ip[ihl:]
	if len(icmp) < icmpHeaderLen {
		h.cnt.malformed.Add(1)
		return
	}
	if checksumFold(onesSum(0, icmp)) != 0xFFFF {
		h.cnt.badChecksum.Add(1)
		return
	}
	if icmp[0] != icmpEchoRequest || icmp[1] != 0 {
		h.cnt.icmpOtherRx.Add(1)
		return
	}
	h.cnt.icmpEchoRx.Add(1)
	src := netip.AddrFrom4([4]byte(ip[12:16]))
	if !unicastSource(src) || ipv4HeaderLen+len(icmp) > h.mtu {
		return // nobody to answer, or an answer that would not fit
	}
	bp := h.getTx()
	defer h.txBuf.Put(bp)
	f := (*bp)[:ethHeaderLen+ipv4HeaderLen+len(icmp)]
	putEth(f, [6]byte(frame[6:12]), h.mac, etherTypeIPv4)
	rip := f[ethHeaderLen:]
	putIPv4(rip, ipProtoICMP, replyTTL, netip.AddrFrom4([4]byte(ip[16:20])), src, len(icmp))
	r := rip[ipv4HeaderLen:]
	copy(r, icmp)
	r[0], r[2], r[3] = icmpEchoReply, 0, 0
	binary.BigEndian.PutUint16(r[2:], ^checksumFold(onesSum(0, r)))
	// Straight back to the frame's source MAC: Linux does not learn
	// neighbours from ICMP, and the asker is on the link by definition.
	h.cnt.icmpEchoTx.Add(1)
	h.writeFrame(f)
}

// handleICMPv6 verifies the checksum and dispatches an ICMPv6 message.
// unicast tells whether the destination is one of our addresses (else it
// is a group we joined). ip is trimmed to its payload length.
func (h *Host) handleICMPv6(frame, ip []byte, unicast bool) {
	icmp := ip[ipv6HeaderLen:]
	if len(icmp) < 4 {
		h.cnt.malformed.Add(1)
		return
	}
	if checksumFold(pseudoSum6(ip, ipProtoICMPv6, len(icmp))+onesSum(0, icmp)) != 0xFFFF {
		h.cnt.badChecksum.Add(1)
		return
	}
	switch icmp[0] {
	case icmpv6EchoRequest:
		if !unicast || icmp[1] != 0 || len(icmp) < icmpHeaderLen {
			h.cnt.icmpOtherRx.Add(1)
			return
		}
		h.echoV6(frame, ip, icmp)
	case icmpv6NeighborSolic:
		h.handleNS(frame, ip, icmp, unicast)
	case icmpv6NeighborAdvert:
		h.handleNA(frame, ip, icmp, unicast)
	case icmpv6RouterSolicit, icmpv6RouterAdvert, icmpv6Redirect:
		h.cnt.ndIgnored.Add(1) // no routers, no gateway support
	default:
		h.cnt.icmpOtherRx.Add(1)
	}
}

// echoV6 answers an ICMPv6 echo request.
func (h *Host) echoV6(frame, ip, icmp []byte) {
	h.cnt.icmpEchoRx.Add(1)
	src := netip.AddrFrom16([16]byte(ip[8:24]))
	if !unicastSource(src) || ipv6HeaderLen+len(icmp) > h.mtu {
		return
	}
	bp := h.getTx()
	defer h.txBuf.Put(bp)
	f := (*bp)[:ethHeaderLen+ipv6HeaderLen+len(icmp)]
	putEth(f, [6]byte(frame[6:12]), h.mac, etherTypeIPv6)
	rip := f[ethHeaderLen:]
	putIPv6(rip, ipProtoICMPv6, replyTTL, netip.AddrFrom16([16]byte(ip[24:40])), src, len(icmp))
	r := rip[ipv6HeaderLen:]
	copy(r, icmp)
	r[0] = icmpv6EchoReply
	putICMPv6Checksum(rip)
	h.cnt.icmpEchoTx.Add(1)
	h.writeFrame(f)
}

// sendPortUnreachable answers a UDP datagram to a port nobody listens on.
// ip is the offending packet, trimmed to its length; the reply goes
// straight to the frame's source MAC.
func (h *Host) sendPortUnreachable(frame, ip []byte, v6 bool) {
	var src, dst netip.Addr
	if v6 {
		src, dst = netip.AddrFrom16([16]byte(ip[8:24])), netip.AddrFrom16([16]byte(ip[24:40]))
	} else {
		src, dst = netip.AddrFrom4([4]byte(ip[12:16])), netip.AddrFrom4([4]byte(ip[16:20]))
	}
	if !unicastSource(src) || (!v6 && h.isBroadcast4(src)) {
		return // never an ICMP error to a group or broadcast (RFC 1122 §3.2.2, RFC 4443 §2.4 e)
	}
	if !h.rl.allow() {
		h.cnt.icmpRateLimited.Add(1)
		return
	}
	hdr, limit, et := ipv4HeaderLen, icmpv4ErrorMax, uint16(etherTypeIPv4)
	if v6 {
		hdr, limit, et = ipv6HeaderLen, icmpv6ErrorMax, etherTypeIPv6
	}
	limit = min(limit, h.mtu)
	quote := min(len(ip), limit-hdr-icmpHeaderLen)
	bp := h.getTx()
	defer h.txBuf.Put(bp)
	f := (*bp)[:ethHeaderLen+hdr+icmpHeaderLen+quote]
	putEth(f, [6]byte(frame[6:12]), h.mac, et)
	rip := f[ethHeaderLen:]
	icmp := rip[hdr:]
	clear(icmp[:icmpHeaderLen])
	copy(icmp[icmpHeaderLen:], ip[:quote])
	if v6 {
		putIPv6(rip, ipProtoICMPv6, replyTTL, dst, src, len(icmp))
		icmp[0], icmp[1] = icmpv6DestUnreachable, icmpv6PortUnreachable
		putICMPv6Checksum(rip)
	} else {
		putIPv4(rip, ipProtoICMP, replyTTL, dst, src, len(icmp))
		icmp[0], icmp[1] = icmpDestUnreachable, icmpPortUnreachable
		binary.BigEndian.PutUint16(icmp[2:], ^checksumFold(onesSum(0, icmp)))
	}
	h.cnt.portUnreachableTx.Add(1)
	h.writeFrame(f)
}

// putICMPv6Checksum fills in the checksum of the ICMPv6 message that
// directly follows the IPv6 header ip (whose payload length is set).
func putICMPv6Checksum(ip []byte) {
	icmp := ip[ipv6HeaderLen : ipv6HeaderLen+int(binary.BigEndian.Uint16(ip[4:]))]
	icmp[2], icmp[3] = 0, 0
	sum := pseudoSum6(ip, ipProtoICMPv6, len(icmp)) + onesSum(0, icmp)
	binary.BigEndian.PutUint16(icmp[2:], ^checksumFold(sum))
}

// unicastSource reports whether a packet from a can be answered.
func unicastSource(a netip.Addr) bool {
	return a.IsValid() && !a.IsUnspecified() && !a.IsMulticast() &&
		a != netip.AddrFrom4([4]byte{255, 255, 255, 255})
}

// isBroadcast4 reports whether a is the directed broadcast address of one
// of our IPv4 prefixes.
func (h *Host) isBroadcast4(a netip.Addr) bool {
	for _, p := range h.prefixes {
		if !p.Addr().Is4() || p.Bits() >= 31 || !p.Contains(a) {
			continue
		}
		b := a.As4()
		host := binary.BigEndian.Uint32(b[:]) & (1<<(32-p.Bits()) - 1)
		if host == 1<<(32-p.Bits())-1 {
			return true
		}
	}
	return false
}

// icmpLimiter is a token bucket for ICMP errors (Linux's icmp_ratelimit /
// icmp_msgs_per_sec idea): a burst, then a steady rate. It is used only by
// the reader goroutine, hence no lock.
type icmpLimiter struct {
	clk    clock.Clock
	tokens float64
	last   time.Duration
}

func (l *icmpLimiter) init(c clock.Clock) {
	l.clk, l.tokens, l.last = c, icmpBurst, c.Now()
}

func (l *icmpLimiter) allow() bool {
	now := l.clk.Now()
	l.tokens = min(icmpBurst, l.tokens+float64(now-l.last)*icmpRate/float64(time.Second))
	l.last = now
	if l.tokens < 1 {
		return false
	}
	l.tokens--
	return true
}
