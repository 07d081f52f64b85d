// ARP (RFC 826) for Ethernet and IPv4: answering requests for our
// addresses, learning neighbours with the RFC 826 merge rule, and the
// requests the neighbour cache sends (resolution, unicast probes, RFC 5227
// announcements).
//
// An Ethernet/IPv4 ARP packet, 28 bytes after the Ethernet header:
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|      Hardware type (1)        |     Protocol type (0x0800)    |
//	|  HLEN (6)     |  PLEN (4)     |  Operation (1 req, 2 reply)   |
//	|                 Sender hardware address (6) ...               |
//	|  ...                          |  Sender protocol address (4)  |
//	|  ...                          |  Target hardware address (6)  |
//	|  ...                                                          |
//	|                 Target protocol address (4)                   |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+

package tap

import (
	"encoding/binary"
	"net/netip"
)

const (
	arpLen     = 28
	arpRequest = 1
	arpReply   = 2
)

// arpPacket is a view of an Ethernet/IPv4 ARP packet (at least arpLen
// bytes; valid checks the fixed fields).
type arpPacket []byte

func (a arpPacket) op() uint16           { return binary.BigEndian.Uint16(a[6:]) }
func (a arpPacket) senderMAC() [6]byte   { return [6]byte(a[8:14]) }
func (a arpPacket) senderIP() netip.Addr { return netip.AddrFrom4([4]byte(a[14:18])) }
func (a arpPacket) targetIP() netip.Addr { return netip.AddrFrom4([4]byte(a[24:28])) }

// valid reports whether the packet is Ethernet/IPv4 ARP with a known
// operation. Other hardware or protocol types are not ours to answer.
func (a arpPacket) valid() bool {
	return len(a) >= arpLen &&
		binary.BigEndian.Uint16(a[0:]) == 1 && binary.BigEndian.Uint16(a[2:]) == etherTypeIPv4 &&
		a[4] == 6 && a[5] == 4 && (a.op() == arpRequest || a.op() == arpReply)
}

// handleARP processes one ARP frame (RFC 826 "Packet Reception").
func (h *Host) handleARP(frame []byte) {
	a := arpPacket(frame[ethHeaderLen:])
	if !a.valid() {
		h.cnt.malformed.Add(1)
		return
	}
	sha, spa, tpa := a.senderMAC(), a.senderIP(), a.targetIP()
	if sha == h.mac {
		// Our own frame looped back by a bridge, or a host claiming our
		// MAC: either way nothing to learn or answer.
		h.cnt.arpIgnored.Add(1)
		return
	}
	if sha[0]&1 != 0 || sha == [6]byte{} {
		h.cnt.malformed.Add(1) // a group or zero sender address is bogus
		return
	}
	forUs := containsAddr(h.addrs4, tpa)
	if a.op() == arpReply {
		h.cnt.arpRepliesRx.Add(1)
	} else if forUs {
		h.cnt.arpRequestsRx.Add(1)
	} else {
		h.cnt.arpIgnored.Add(1)
	}
	// The merge rule: update an entry for the sender from any ARP; create
	// one only when we are the target. A reply unicast to us confirms
	// reachability, as in Linux; requests and broadcast (gratuitous)
	// replies only say the sender exists. A sender of 0.0.0.0 is an RFC 5227
	// probe: nothing to learn.
	if !spa.IsUnspecified() {
		confirmed := a.op() == arpReply && [6]byte(frame[0:6]) == h.mac
		h.learn(spa, sha, neighborUpdate{create: forUs, confirmed: confirmed, override: true})
	}
	if a.op() == arpRequest && forUs {
		// Reply to the asker, unicast (RFC 826), also to a probe whose
		// sender address is 0.0.0.0 (RFC 5227 §2.1.1: that is how the
		// prober learns of the conflict).
		h.sendARP(arpReply, sha, tpa, sha, spa)
	}
}

// sendARP writes one ARP packet from our MAC: op, with sender address spa
// and target tha/tpa, in a frame to dst.
func (h *Host) sendARP(op uint16, dst [6]byte, spa netip.Addr, tha [6]byte, tpa netip.Addr) {
	bp := h.getTx()
	defer h.txBuf.Put(bp)
	f := (*bp)[:ethHeaderLen+arpLen]
	putEth(f, dst, h.mac, etherTypeARP)
	a := f[ethHeaderLen:]
	binary.BigEndian.PutUint16(a[0:], 1)
	binary.BigEndian.PutUint16(a[2:], etherTypeIPv4)
	a[4], a[5] = 6, 4
	binary.BigEndian.PutUint16(a[6:], op)
	copy(a[8:14], h.mac[:])
	s, t := spa.As4(), tpa.As4()
	copy(a[14:18], s[:])
	copy(a[18:24], tha[:])
	copy(a[24:28], t[:])
	if op == arpReply {
		h.cnt.arpRepliesTx.Add(1)
	} else {
		h.cnt.arpRequestsTx.Add(1)
	}
	h.writeFrame(f)
}
