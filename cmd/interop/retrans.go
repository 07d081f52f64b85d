// Counting retransmissions in a RoCEv2 capture: a request packet (any
// opcode that is not a response: SEND, WRITE, READ request, atomics, UD
// SEND) that its sender put on the wire with a PSN it had already used
// towards the same destination QP. On a clean bridge there should be none;
// each one means a sender's retry timer fired or it was NAKed. IBTA Vol 1
// §9.7 (PSN); rxe, for one, resends from the oldest unacknowledged PSN when
// its retry timer fires.

package main

import (
	"fmt"
	"net/netip"

	"github.com/rnic/rnic/roce/wire"
	"github.com/rnic/rnic/transport/pcap"
)

// psnKey identifies one request PSN of one sender towards one QP.
type psnKey struct {
	src, dst netip.Addr
	destQP   uint32
	psn      uint32
}

// CountRoCERetransmissions counts the RoCEv2 request packets of frames
// whose (source, destination, destination QP, PSN) appeared before. Frames
// that are not RoCEv2 on port 4791 (ARP, TCP, bad frames) are ignored.
func CountRoCERetransmissions(frames []pcap.Frame) int {
	seen := make(map[psnKey]struct{})
	n := 0
	var f wire.Frame
	for _, fr := range frames {
		if f.Decode(fr.Data, 0) != nil {
			continue
		}
		info := f.Packet.Info()
		if info == nil || info.Response {
			continue
		}
		src, dst, ok := ipAddrs(f.IP(), f.IPv6)
		if !ok {
			continue
		}
		bth := f.Packet.BTH()
		k := psnKey{src: src, dst: dst, destQP: bth.DestQP(), psn: bth.PSN()}
		if _, dup := seen[k]; dup {
			n++
			continue
		}
		seen[k] = struct{}{}
	}
	return n
}

// CountRoCERetransmissionsFile is CountRoCERetransmissions over the capture
// at path.
func CountRoCERetransmissionsFile(path string) (int, error) {
	frames, err := pcap.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("interop: %w", err)
	}
	return CountRoCERetransmissions(frames), nil
}

// ipAddrs returns the source and destination of an IPv4 or IPv6 header.
func ipAddrs(ip []byte, v6 bool) (src, dst netip.Addr, ok bool) {
	if v6 {
		if len(ip) < 40 {
			return src, dst, false
		}
		return netip.AddrFrom16([16]byte(ip[8:24])), netip.AddrFrom16([16]byte(ip[24:40])), true
	}
	if len(ip) < 20 {
		return src, dst, false
	}
	return netip.AddrFrom4([4]byte(ip[12:16])), netip.AddrFrom4([4]byte(ip[16:20])), true
}
