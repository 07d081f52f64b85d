// RoCEv2 multicast on the wire: the host's membership of the IP multicast
// groups the engine's QPs attach to (transport.GroupMember), announced
// as a Linux host does so that a bridge with IGMP/MLD snooping and rxe
// peers see it: IGMPv3 reports (RFC 3376 §4.2) for IPv4 groups, MLDv2
// reports (RFC 3810 §5.2) for IPv6 ones. A join sends a CHANGE_TO_EXCLUDE
// record with no sources, a leave a CHANGE_TO_INCLUDE record with none;
// a query (general, or for a group of ours) is answered with MODE_IS_EXCLUDE
// records for the groups it asks about, at once (no random delay: one
// report from a host with few groups). Frames to a joined group's MAC and
// address on the RoCE port go to the engine; other ports of a group get no
// port unreachable (RFC 1122 §3.2.2). Reports go once, not Robustness
// Variable times: a lost one is made good by the next query.

package tap

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/rnic/rnic/transport"
)

// IGMP and MLD numbers.
const (
	ipProtoIGMP        = 2
	igmpQuery          = 0x11 // membership query, every version (RFC 3376 §4.1)
	igmpV3Report       = 0x22
	icmpv6MLDQuery     = 130 // MLDv1 and v2 queries (RFC 3810 §5.1)
	mcastModeIsExclude = 2   // current state: a member (RFC 3376 §4.2.12, RFC 3810 §5.2.12)
	mcastToInclude     = 3   // CHANGE_TO_INCLUDE_MODE with no sources: a leave
	mcastToExclude     = 4   // CHANGE_TO_EXCLUDE_MODE with no sources: a join
	ipv4RouterAlertLen = 4   // the IPv4 Router Alert option (RFC 2113)
)

var (
	// allIGMPv3Routers is 224.0.0.22, where IGMPv3 reports go.
	allIGMPv3Routers = netip.AddrFrom4([4]byte{224, 0, 0, 22})
	// allSystems is 224.0.0.1, where general IGMP queries come.
	allSystems = netip.AddrFrom4([4]byte{224, 0, 0, 1})
)

// mcastGroups are the RoCE groups joined, replaced on each change so the
// reader needs no lock.
type mcastGroups struct {
	ips  []netip.Addr
	macs [][6]byte
}

// mcastState is the Host's part for multicast.
type mcastState struct {
	mu     sync.Mutex // serialises joins and leaves
	groups atomic.Pointer[mcastGroups]
}

var _ transport.GroupMember = (*Host)(nil)

// JoinGroup implements transport.GroupMember: frames to group reach the
// RoCE receiver from now on, and the join is reported. Joining twice is
// harmless.
func (h *Host) JoinGroup(group netip.Addr) error {
	group = group.Unmap()
	if !group.IsMulticast() {
		return fmt.Errorf("tap: join %v: not a multicast address", group)
	}
	h.mc.mu.Lock()
	defer h.mc.mu.Unlock()
	old := h.mcGroups()
	if slices.Contains(old.ips, group) {
		return nil
	}
	next := &mcastGroups{ips: append(slices.Clip(old.ips), group), macs: append(slices.Clip(old.macs), groupMAC(group))}
	h.mc.groups.Store(next)
	h.report(mcastToExclude, []netip.Addr{group})
	return nil
}

// LeaveGroup implements transport.GroupMember.
func (h *Host) LeaveGroup(group netip.Addr) error {
	group = group.Unmap()
	h.mc.mu.Lock()
	defer h.mc.mu.Unlock()
	old := h.mcGroups()
	i := slices.Index(old.ips, group)
	if i < 0 {
		return nil
	}
	next := &mcastGroups{ips: slices.Delete(slices.Clone(old.ips), i, i+1), macs: slices.Delete(slices.Clone(old.macs), i, i+1)}
	h.mc.groups.Store(next)
	h.report(mcastToInclude, []netip.Addr{group})
	return nil
}

// LoopsGroups implements transport.GroupMember: the wire does not hand
// the NIC its own frames back, so the engine serves its own members.
func (h *Host) LoopsGroups() bool { return false }

// mcGroups returns the joined groups (never nil).
func (h *Host) mcGroups() *mcastGroups {
	if g := h.mc.groups.Load(); g != nil {
		return g
	}
	return &mcastGroups{}
}

// mcastMember reports whether ip is a RoCE group joined.
func (h *Host) mcastMember(ip netip.Addr) bool { return slices.Contains(h.mcGroups().ips, ip) }

// acceptMcastMAC is the MAC filter's part for RoCE groups: a joined
// group's MAC, and, while an IPv4 group is joined, 224.0.0.1's, where
// general IGMP queries come.
func (h *Host) acceptMcastMAC(dst [6]byte) bool {
	g := h.mcGroups()
	if len(g.ips) == 0 {
		return false
	}
	return slices.Contains(g.macs, dst) || dst == groupMAC(allSystems)
}

// handleMcastIPv4 takes an IPv4 packet to a multicast address: an IGMP
// query, or a RoCE datagram to a joined group. It reports whether the
// packet was one of those (else the caller drops it as not ours).
func (h *Host) handleMcastIPv4(frame, ip []byte, ihl int, dst netip.Addr) bool {
	switch {
	case ip[9] == ipProtoIGMP && (dst == allSystems || h.mcastMember(dst)):
		h.handleIGMP(ip[ihl:])
		return true
	case ip[9] == ipProtoUDP && h.mcastMember(dst):
		h.mcastUDP(frame, ip[ihl:], ip[1]&3)
		return true
	}
	return false
}

// mcastUDP hands a datagram to a joined group on the RoCE port to the
// engine; other ports are dropped silently.
func (h *Host) mcastUDP(frame, udp []byte, ecn uint8) {
	if len(udp) < udpHeaderLen || binary.BigEndian.Uint16(udp[2:]) != h.rocePort {
		h.cnt.notOurIP.Add(1)
		return
	}
	if ecn == 3 {
		h.cnt.ceMarked.Add(1)
	}
	h.roce.deliver(frame)
}

// handleIGMP answers a query for our groups (any IGMP version's: the
// reply is IGMPv3, as Linux answers without an older querier configured).
func (h *Host) handleIGMP(msg []byte) {
	group, ok := parseIGMPQuery(msg)
	if !ok {
		h.cnt.malformed.Add(1)
		return
	}
	h.answerQuery(group, true)
}

// parseIGMPQuery decodes an IGMP membership query (RFC 3376 §4.1; an
// IGMPv1/v2 query is its first 8 bytes): the group it asks about, the
// unspecified address for a general query. ok is false for anything else
// or a bad checksum.
func parseIGMPQuery(msg []byte) (group netip.Addr, ok bool) {
	if len(msg) < 8 || msg[0] != igmpQuery || checksumFold(onesSum(0, msg)) != 0xFFFF {
		return netip.Addr{}, false
	}
	return netip.AddrFrom4([4]byte(msg[4:8])), true
}

// handleMcastIPv6 takes an IPv6 packet to a multicast address: an MLD
// query behind its hop-by-hop header, or a RoCE datagram to a joined
// group. It reports whether the packet was one of those.
func (h *Host) handleMcastIPv6(frame, ip []byte, dst netip.Addr) bool {
	member := h.mcastMember(dst)
	switch {
	case ip[6] == ipProtoHopOpts && (dst == allNodes || member):
		group, ok := parseMLDQuery(ip[ipv6HeaderLen:], ip)
		if !ok {
			return false // not a query (or not one we read): as before
		}
		h.answerQuery(group, false)
		return true
	case ip[6] == ipProtoUDP && member:
		h.mcastUDP(frame, ip[ipv6HeaderLen:], uint8(binary.BigEndian.Uint32(ip)>>20)&3)
		return true
	}
	return false
}

// parseMLDQuery decodes an MLD query (RFC 3810 §5.1, an MLDv1 query is
// its first 24 bytes) behind a hop-by-hop header (RFC 8200 §4.3): the
// group it asks about, :: for a general query. ip is the whole packet,
// for the checksum's pseudo-header.
func parseMLDQuery(payload, ip []byte) (group netip.Addr, ok bool) {
	if len(payload) < 8 || payload[0] != ipProtoICMPv6 {
		return netip.Addr{}, false
	}
	hbh := (int(payload[1]) + 1) * 8
	if hbh > len(payload) {
		return netip.Addr{}, false
	}
	msg := payload[hbh:]
	if len(msg) < 24 || msg[0] != icmpv6MLDQuery || msg[1] != 0 {
		return netip.Addr{}, false
	}
	if checksumFold(onesSum(0, ip[8:40])+uint32(len(msg)>>16)+uint32(len(msg)&0xFFFF)+ipProtoICMPv6+onesSum(0, msg)) != 0xFFFF {
		return netip.Addr{}, false
	}
	return netip.AddrFrom16([16]byte(msg[8:24])), true
}

// answerQuery reports the groups of the family a query asks about: all of
// them for a general query, the one named if we are in it.
func (h *Host) answerQuery(group netip.Addr, v4 bool) {
	var asked []netip.Addr
	for _, g := range h.mcGroups().ips {
		if g.Is4() == v4 && (group.IsUnspecified() || group == g) {
			asked = append(asked, g)
		}
	}
	h.cnt.mcastQueriesRx.Add(1)
	if len(asked) > 0 {
		h.report(mcastModeIsExclude, asked)
	}
}

// report sends one report with a record of type typ, no sources, for
// each group: IGMPv3 for the IPv4 groups, MLDv2 for the IPv6 ones.
func (h *Host) report(typ uint8, groups []netip.Addr) {
	var v4, v6 []netip.Addr
	for _, g := range groups {
		if g.Is4() {
			v4 = append(v4, g)
		} else {
			v6 = append(v6, g)
		}
	}
	if len(v4) > 0 && len(h.addrs4) > 0 {
		h.sendIGMPv3(typ, v4)
	}
	if len(v6) > 0 {
		h.sendMLDv2(typ, v6)
	}
}

// sendIGMPv3 sends an IGMPv3 report from our first IPv4 address to
// 224.0.0.22 with TTL 1 and a Router Alert option (RFC 3376 §4).
//
//	IPv4 (IHL 6, option 148 len 4) | type 0x22, reserved, checksum (2),
//	reserved (2), record count (2) | records: type, aux len 0, sources 0
//	(2), group (4)
func (h *Host) sendIGMPv3(typ uint8, groups []netip.Addr) {
	msgLen := 8 + 8*len(groups)
	ihl := ipv4HeaderLen + ipv4RouterAlertLen
	bp := h.getTx()
	defer h.txBuf.Put(bp)
	if ethHeaderLen+ihl+msgLen > len(*bp) {
		return
	}
	f := (*bp)[:ethHeaderLen+ihl+msgLen]
	putEth(f, groupMAC(allIGMPv3Routers), h.mac, etherTypeIPv4)
	ip := f[ethHeaderLen:]
	putIPv4(ip, ipProtoIGMP, 1, h.addrs4[0], allIGMPv3Routers, ipv4RouterAlertLen+msgLen)
	// Move the addresses' room for the option: rewrite the header with IHL 6.
	ip[0] = 0x46
	ip[1] = 0xc0 // precedence: internetwork control, as Linux sends IGMP
	copy(ip[ipv4HeaderLen:], []byte{0x94, 0x04, 0, 0})
	ip[10], ip[11] = 0, 0
	binary.BigEndian.PutUint16(ip[10:], ^checksumFold(onesSum(0, ip[:ihl])))
	msg := ip[ihl:]
	clear(msg[:8])
	msg[0] = igmpV3Report
	binary.BigEndian.PutUint16(msg[6:], uint16(len(groups)))
	for i, g := range groups {
		r := msg[8+8*i:]
		r[0], r[1], r[2], r[3] = typ, 0, 0, 0
		a := g.As4()
		copy(r[4:8], a[:])
	}
	binary.BigEndian.PutUint16(msg[2:], ^checksumFold(onesSum(0, msg)))
	h.cnt.igmpReportTx.Add(1)
	h.writeFrame(f)
}

// sendMLDv2 sends an MLDv2 report of records of type typ, as
// sendMLDReport does for the solicited-node groups.
func (h *Host) sendMLDv2(typ uint8, groups []netip.Addr) {
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
		return
	}
	f := (*bp)[:ethHeaderLen+ipv6HeaderLen+hbhLen+mldLen]
	putEth(f, groupMAC(allMLDv2Routers), h.mac, etherTypeIPv6)
	ip := f[ethHeaderLen:]
	putIPv6(ip, ipProtoHopOpts, 1, src, allMLDv2Routers, hbhLen+mldLen)
	hbh := ip[ipv6HeaderLen:]
	copy(hbh, []byte{ipProtoICMPv6, 0, 5, 2, 0, 0, 1, 0})
	mld := hbh[hbhLen:]
	clear(mld[:8])
	mld[0] = icmpv6MLDv2Report
	binary.BigEndian.PutUint16(mld[6:], uint16(len(groups)))
	for i, g := range groups {
		r := mld[8+20*i:]
		r[0], r[1], r[2], r[3] = typ, 0, 0, 0
		a := g.As16()
		copy(r[4:20], a[:])
	}
	sum := pseudoSum6(ip, ipProtoICMPv6, len(mld)) + onesSum(0, mld)
	binary.BigEndian.PutUint16(mld[2:], ^checksumFold(sum))
	h.cnt.mldReportTx.Add(1)
	h.writeFrame(f)
}

// groupMAC is the Ethernet address of a multicast group of either family:
// 01:00:5e and the low 23 bits for IPv4 (RFC 1112 §6.4), multicastMAC's
// for IPv6.
func groupMAC(g netip.Addr) [6]byte {
	if g.Is4() {
		a := g.As4()
		return [6]byte{0x01, 0x00, 0x5e, a[1] & 0x7f, a[2], a[3]}
	}
	return multicastMAC(g)
}
