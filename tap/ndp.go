// IPv6 Neighbor Discovery (RFC 4861) for the host's addresses: answering
// Neighbor Solicitations, learning from NS and NA, the solicitations the
// neighbour cache sends, unsolicited advertisements, and the MLDv2 report
// (RFC 3810) that makes snooping bridges forward our solicited-node groups.
// Router discovery and redirects are not for us (no gateway support) and
// are ignored, counted.
//
// Neighbor Solicitation (§4.3) and Advertisement (§4.4), after the IPv6
// header (hop limit 255):
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|  Type 135/136 |     Code 0    |          Checksum             |
//	|R|S|O|                     Reserved                            |  (NS: all reserved)
//	|                   Target Address (16 bytes)                   |
//	|   Options ... (type, length in 8-byte units, data)            |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Link-layer address options (§4.6.1): type 1 source, 2 target; length 1;
// the 6-byte MAC.

package tap

import (
	"encoding/binary"
	"net/netip"
)

const (
	icmpv6RouterSolicit  = 133
	icmpv6RouterAdvert   = 134
	icmpv6NeighborSolic  = 135
	icmpv6NeighborAdvert = 136
	icmpv6Redirect       = 137
	icmpv6MLDv2Report    = 143

	ndMsgLen       = 24 // NS/NA without options
	ndOptSourceLLA = 1
	ndOptTargetLLA = 2
	ndHopLimit     = 255

	naFlagRouter    = 0x80
	naFlagSolicited = 0x40
	naFlagOverride  = 0x20

	// mldv2ChangeToExclude is the record type of a join (RFC 3810 §6.1:
	// a join is a change to EXCLUDE mode with no sources).
	mldv2ChangeToExclude = 4
)

// allMLDv2Routers is ff02::16, where MLDv2 reports go (RFC 3810 §5.2.14).
var allMLDv2Routers = netip.AddrFrom16([16]byte{0: 0xff, 1: 0x02, 15: 0x16})

// ndLinkLayerOption finds the link-layer address option of type want in
// opts. ok is false when an option is malformed (zero length, or running
// past the end), which invalidates the whole message (RFC 4861 §7.1).
func ndLinkLayerOption(opts []byte, want uint8) (mac [6]byte, found, ok bool) {
	for len(opts) > 0 {
		if len(opts) < 2 {
			return mac, false, false
		}
		n := int(opts[1]) * 8
		if n == 0 || n > len(opts) {
			return mac, false, false
		}
		if opts[0] == want && !found {
			if n < 8 {
				return mac, false, false
			}
			mac, found = [6]byte(opts[2:8]), true
		}
		opts = opts[n:]
	}
	return mac, found, true
}

// ndValid holds the checks common to NS and NA (RFC 4861 §7.1.1, §7.1.2):
// hop limit 255 (the message cannot have crossed a router), code 0, length
// and a unicast target.
func ndValid(ip, icmp []byte) bool {
	return ip[7] == ndHopLimit && len(icmp) >= ndMsgLen && icmp[1] == 0 &&
		icmp[8] != 0xff // target is not multicast
}

// handleNS answers a Neighbor Solicitation for one of our addresses
// (RFC 4861 §7.2.3, §7.2.4).
func (h *Host) handleNS(frame, ip, icmp []byte, unicast bool) {
	if !ndValid(ip, icmp) {
		h.cnt.ndInvalid.Add(1)
		return
	}
	slla, hasSLLA, ok := ndLinkLayerOption(icmp[ndMsgLen:], ndOptSourceLLA)
	if !ok {
		h.cnt.ndInvalid.Add(1)
		return
	}
	src := netip.AddrFrom16([16]byte(ip[8:24]))
	target := netip.AddrFrom16([16]byte(icmp[8:24]))
	dad := src.IsUnspecified()
	if dad && (unicast || hasSLLA || netip.AddrFrom16([16]byte(ip[24:40])) != solicitedNode(target)) {
		// A DAD probe goes to the solicited-node group and carries no
		// source link-layer address (§7.1.1).
		h.cnt.ndInvalid.Add(1)
		return
	}
	if !containsAddr(h.addrs6, target) {
		h.cnt.ndIgnored.Add(1)
		return
	}
	h.cnt.ndNSRx.Add(1)
	if dad {
		// Someone wants our address: defend it with an advertisement to
		// all nodes, S=0 (§7.2.4).
		h.logf("tap: DAD probe for our address %v from %s", target, macString([6]byte(frame[6:12])))
		h.sendNA(target, allNodes, multicastMAC(allNodes), false)
		return
	}
	dstMAC := [6]byte(frame[6:12])
	if hasSLLA {
		h.learn(src, slla, neighborUpdate{create: true, override: true})
		dstMAC = slla
	}
	h.sendNA(target, src, dstMAC, true)
}

// handleNA learns from a Neighbor Advertisement (RFC 4861 §7.2.5).
func (h *Host) handleNA(frame, ip, icmp []byte, unicast bool) {
	if !ndValid(ip, icmp) {
		h.cnt.ndInvalid.Add(1)
		return
	}
	flags := icmp[4]
	solicited := flags&naFlagSolicited != 0
	if solicited && !unicast {
		h.cnt.ndInvalid.Add(1) // S=1 to a group makes no sense (§7.1.2)
		return
	}
	tlla, hasTLLA, ok := ndLinkLayerOption(icmp[ndMsgLen:], ndOptTargetLLA)
	if !ok {
		h.cnt.ndInvalid.Add(1)
		return
	}
	h.cnt.ndNARx.Add(1)
	target := netip.AddrFrom16([16]byte(icmp[8:24]))
	if containsAddr(h.addrs6, target) {
		h.logf("tap: neighbour advertisement for our own address %v from %s", target, macString([6]byte(frame[6:12])))
		return
	}
	if !hasTLLA {
		h.confirmNoMAC(target, solicited)
		return
	}
	h.learn(target, tlla, neighborUpdate{confirmed: solicited, override: flags&naFlagOverride != 0})
}

// sendNS sends a Neighbor Solicitation for target from src: to the
// solicited-node group, or unicast to mac when probing (§7.2.2), always
// with our source link-layer address.
func (h *Host) sendNS(src, target netip.Addr, unicast bool, mac [6]byte) {
	dst := solicitedNode(target)
	dstMAC := multicastMAC(dst)
	if unicast {
		dst, dstMAC = target, mac
	}
	bp := h.getTx()
	defer h.txBuf.Put(bp)
	f := (*bp)[:ethHeaderLen+ipv6HeaderLen+ndMsgLen+8]
	h.putND(f, dstMAC, src, dst, icmpv6NeighborSolic, 0, target, ndOptSourceLLA)
	h.cnt.ndNSTx.Add(1)
	h.writeFrame(f)
}

// sendNA sends a Neighbor Advertisement for our address target to dst at
// dstMAC: O=1 always (the address is ours), S=1 when answering an NS.
func (h *Host) sendNA(target, dst netip.Addr, dstMAC [6]byte, solicited bool) {
	flags := uint8(naFlagOverride)
	if solicited {
		flags |= naFlagSolicited
	}
	bp := h.getTx()
	defer h.txBuf.Put(bp)
	f := (*bp)[:ethHeaderLen+ipv6HeaderLen+ndMsgLen+8]
	h.putND(f, dstMAC, target, dst, icmpv6NeighborAdvert, flags, target, ndOptTargetLLA)
	h.cnt.ndNATx.Add(1)
	h.writeFrame(f)
}

// putND fills f with an NS or NA carrying one link-layer address option
// (our MAC).
func (h *Host) putND(f []byte, dstMAC [6]byte, src, dst netip.Addr, typ, flags uint8, target netip.Addr, opt uint8) {
	putEth(f, dstMAC, h.mac, etherTypeIPv6)
	ip := f[ethHeaderLen:]
	n := len(ip) - ipv6HeaderLen
	putIPv6(ip, ipProtoICMPv6, ndHopLimit, src, dst, n)
	icmp := ip[ipv6HeaderLen:]
	icmp[0], icmp[1], icmp[2], icmp[3] = typ, 0, 0, 0
	icmp[4] = flags
	icmp[5], icmp[6], icmp[7] = 0, 0, 0
	t := target.As16()
	copy(icmp[8:24], t[:])
	icmp[24], icmp[25] = opt, 1
	copy(icmp[26:32], h.mac[:])
	putICMPv6Checksum(ip)
}

// sendMLDv2Report sends one MLDv2 report (RFC 3810 §5.2) joining every
// solicited-node group of ours. It goes from our link-local address, or
// from :: if we have none (§5.2.13), with hop limit 1 and a Router Alert
// in a hop-by-hop header (§5), to ff02::16.
//
//	IPv6 (next 0) | hop-by-hop: next 58, len 0, Router Alert (5, 2, 0),
//	PadN (1, 0) | ICMPv6 143, code 0, checksum, reserved (2), record count
//	(2) | records: type, aux len 0, sources 0, group (16)
func (h *Host) sendMLDReport() {
	var groups []netip.Addr
	for _, g := range h.groups6 {
		if g != allNodes { // never reported (§6)
			groups = append(groups, g)
		}
	}
	src := netip.IPv6Unspecified()
	for _, a := range h.addrs6 {
		if a.IsLinkLocalUnicast() {
			src = a
			break
		}
	}
	const hbhLen = 8
	mldLen := 8 + 20*len(groups)
	bp := h.getTx()
	defer h.txBuf.Put(bp)
	if ethHeaderLen+ipv6HeaderLen+hbhLen+mldLen > len(*bp) {
		return // cannot happen with a few addresses and MTU ≥ 576
	}
	f := (*bp)[:ethHeaderLen+ipv6HeaderLen+hbhLen+mldLen]
	putEth(f, multicastMAC(allMLDv2Routers), h.mac, etherTypeIPv6)
	ip := f[ethHeaderLen:]
	putIPv6(ip, ipProtoHopOpts, 1, src, allMLDv2Routers, hbhLen+mldLen)
	hbh := ip[ipv6HeaderLen:]
	copy(hbh, []byte{ipProtoICMPv6, 0, 5, 2, 0, 0, 1, 0})
	mld := hbh[hbhLen:]
	mld[0], mld[1], mld[2], mld[3], mld[4], mld[5] = icmpv6MLDv2Report, 0, 0, 0, 0, 0
	binary.BigEndian.PutUint16(mld[6:], uint16(len(groups)))
	for i, g := range groups {
		r := mld[8+20*i:]
		r[0], r[1], r[2], r[3] = mldv2ChangeToExclude, 0, 0, 0
		a := g.As16()
		copy(r[4:20], a[:])
	}
	sum := pseudoSum6(ip, ipProtoICMPv6, len(mld)) + onesSum(0, mld)
	binary.BigEndian.PutUint16(mld[2:], ^checksumFold(sum))
	h.cnt.mldReportTx.Add(1)
	h.writeFrame(f)
}
