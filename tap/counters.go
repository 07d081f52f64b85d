// Host counters: every frame the host stack reads or writes, and every
// reason it drops one (nic/README.md, principle 4). Names follow Linux (rxe,
// /proc/net/snmp, neighbour statistics) where one exists; the comment on
// each field gives that name.

package tap

import (
	"reflect"
	"sync/atomic"
	"unsafe"
)

// HostCounters is a snapshot of a Host's counters.
type HostCounters struct {
	RxFrames uint64 // rx_frames: frames read from the wire (all of them)
	RxBytes  uint64 // rx_bytes
	TxFrames uint64 // tx_frames: frames handed to the wire (the *Tx counters below count the same way)
	TxBytes  uint64 // tx_bytes
	TxErrors uint64 // tx_errors: of those, writes the FrameIO refused

	NotForUs         uint64 // not_for_us: destination MAC neither ours, broadcast nor a joined group
	VLANDropped      uint64 // vlan_dropped: 802.1Q-tagged frames (no VLAN configured)
	UnknownEtherType uint64 // unknown_ethertype
	Malformed        uint64 // malformed: truncated or inconsistent headers
	BadChecksum      uint64 // bad_checksum: IPv4 header, ICMP or ICMPv6 checksum wrong
	Fragments        uint64 // fragments: IPv4 fragments (not reassembled)
	NotOurIP         uint64 // not_our_ip: IP destination not one of ours (nor a group we joined)
	UnknownProto     uint64 // unknown_proto: IP protocol / next header we do not handle

	ARPRequestsRx uint64 // arp_requests_rx: ARP requests for one of our addresses
	ARPRepliesTx  uint64 // arp_replies_tx
	ARPRequestsTx uint64 // arp_requests_tx: resolutions, probes and announcements
	ARPRepliesRx  uint64 // arp_replies_rx
	ARPIgnored    uint64 // arp_ignored: requests for other addresses, ARP from our own MAC

	NDNSRx      uint64 // nd_ns_rx: neighbour solicitations for one of our addresses
	NDNATx      uint64 // nd_na_tx: solicited and unsolicited advertisements
	NDNSTx      uint64 // nd_ns_tx
	NDNARx      uint64 // nd_na_rx
	NDIgnored   uint64 // nd_ignored: RS, RA, redirects, NS for other targets, NA for unknown neighbours
	NDInvalid   uint64 // nd_invalid: hop limit ≠ 255, code ≠ 0, bad options (RFC 4861 §7.1)
	MLDReportTx uint64 // mld_reports_tx
	// IGMP and RoCE multicast groups (mcast.go).
	IGMPReportTx   uint64 // igmp_reports_tx
	McastQueriesRx uint64 // mcast_queries_rx: IGMP and MLD queries read

	ICMPEchoRx        uint64 // icmp_echo_rx: ICMP and ICMPv6 echo requests to us
	ICMPEchoTx        uint64 // icmp_echo_tx: echo replies sent
	ICMPOtherRx       uint64 // icmp_other_rx: other ICMP/ICMPv6 messages (ignored)
	PortUnreachableTx uint64 // port_unreachable_tx
	ICMPRateLimited   uint64 // icmp_ratelimit: port unreachables not sent (icmp_ratelimit)

	RoCERx         uint64 // roce_rx: frames to the RoCE port handed to the receiver
	RoCENoReceiver uint64 // roce_no_receiver: RoCE frames with no receiver installed
	RoCETx         uint64 // roce_tx: frames accepted by the RoCE endpoint's Send
	CEMarked       uint64 // ce_marked: received RoCE frames with ECN = CE (11)
	ECTMarked      uint64 // ect_marked: received RoCE frames with ECN = ECT(0) or ECT(1)
	TCPRx          uint64 // tcp_rx: TCP packets handed to the SetTCP function
	TCPNoHandler   uint64 // tcp_no_handler: TCP packets dropped for want of one
	TCPTx          uint64 // tcp_tx: packets accepted by SendIP

	NoRoute             uint64 // no_route: destination not on link (no gateway support)
	ResolveFailed       uint64 // resolve_failed: resolutions that gave up (Linux res_failed)
	ResolveFailedFrames uint64 // resolve_failed_frames: queued frames dropped with them
	QueueDropped        uint64 // queue_dropped: oldest queued frame dropped for a newer one (unres_discards)
	TooBig              uint64 // too_big: frames or packets over the MTU, refused

	LoopbackFrames  uint64 // loopback_frames: frames to our own addresses turned around inside the NIC
	LoopbackDropped uint64 // loopback_dropped: such frames dropped because the loopback queue was full

	// Offload (a Device opened with Offload: host_offload.go).
	GSORx         uint64 // gso_rx: TCP super-segments received whole (the kernel's GRO/GSO)
	GSOTx         uint64 // gso_tx: TCP super-segments sent for the kernel to segment (TSO)
	GSOTxSegments uint64 // gso_tx_segments: the wire segments those stand for
	CsumFinished  uint64 // csum_finished: received frames whose partial checksum the NIC finished
	VnetMalformed uint64 // vnet_malformed: frames dropped for a malformed virtio_net_hdr
	CsumValidated uint64 // csum_validated: received TCP frames the kernel vouched for, given to the TCP stack unchecked
}

// hostCounters is the live form of HostCounters: the same fields, as
// atomics, so the reader and the senders count without a lock.
type hostCounters struct {
	rxFrames, rxBytes, txFrames, txBytes, txErrors            atomic.Uint64
	notForUs, vlanDropped, unknownEtherType, malformed        atomic.Uint64
	badChecksum, fragments, notOurIP, unknownProto            atomic.Uint64
	arpRequestsRx, arpRepliesTx, arpRequestsTx, arpRepliesRx  atomic.Uint64
	arpIgnored                                                atomic.Uint64
	ndNSRx, ndNATx, ndNSTx, ndNARx, ndIgnored, ndInvalid      atomic.Uint64
	mldReportTx                                               atomic.Uint64
	igmpReportTx, mcastQueriesRx                              atomic.Uint64
	icmpEchoRx, icmpEchoTx, icmpOtherRx                       atomic.Uint64
	portUnreachableTx, icmpRateLimited                        atomic.Uint64
	roceRx, roceNoReceiver, roceTx, ceMarked, ectMarked       atomic.Uint64
	tcpRx, tcpNoHandler, tcpTx                                atomic.Uint64
	noRoute, resolveFailed, resolveFailedFrames, queueDropped atomic.Uint64
	tooBig                                                    atomic.Uint64
	loopbackFrames, loopbackDropped                           atomic.Uint64
	gsoRx, gsoTx, gsoTxSegments, csumFinished, vnetMalformed  atomic.Uint64
	csumValidated                                             atomic.Uint64
}

// snapshot copies the live counters field by field. The two structs list
// the same counters in the same order (a test checks it), so the copy is
// done by position rather than by a hand-written list that could drift.
func (c *hostCounters) snapshot() HostCounters {
	var out HostCounters
	src := reflect.ValueOf(c).Elem()
	dst := reflect.ValueOf(&out).Elem()
	for i := range src.NumField() {
		// The fields are unexported, so reflect hands out their address
		// only through UnsafeAddr; each is an atomic.Uint64 (a test checks).
		live := (*atomic.Uint64)(unsafe.Pointer(src.Field(i).UnsafeAddr()))
		dst.Field(i).SetUint(live.Load())
	}
	return out
}
