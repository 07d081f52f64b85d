// A fault row's capture, split by sender: what rnic put on the wire and
// what the guest did. Under netem the guest's frames may come twice
// (duplicate), late (reorder) or damaged (corrupt); rnic's own frames
// must still be sound, and its retransmissions show how it recovered.

package main

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/rnic/rnic/roce/decode"
	"github.com/rnic/rnic/roce/wire"
	"github.com/rnic/rnic/transport/pcap"
)

// DirStats are the frames one side sent.
type DirStats struct {
	Frames int // IP frames from this side
	// Retrans are RoCEv2 requests whose PSN this side had sent before
	// to the same QP (a duplicate netem made counts too), or on iWARP
	// tshark's TCP retransmissions.
	Retrans int
	NAKs    int // RoCEv2 NAKs (PSN sequence error, RNR, others) sent
	// Bad are RoCEv2 frames with a wrong ICRC and frames to the RoCEv2
	// port that do not decode; on iWARP, frames with a wrong TCP or IPv4
	// checksum.
	Bad int
}

// WireStats are a capture's frames by sender: rnic and the guest.
type WireStats struct{ Rnic, Peer DirStats }

// String is the table's short form: "frames/retrans/NAKs/bad".
func (d DirStats) String() string {
	return fmt.Sprintf("%d/%d/%d/%d", d.Frames, d.Retrans, d.NAKs, d.Bad)
}

// CountWire splits frames by source address: rnic is rnicIP, the guest
// peerIP; frames from neither (ARP has no IP header) are left out.
func CountWire(frames []pcap.Frame, rnicIP, peerIP netip.Addr) WireStats {
	var ws WireStats
	seen := make(map[psnKey]struct{})
	for _, fr := range frames {
		r := decode.DecodeFrame(fr.Data, 0)
		var d *DirStats
		switch r.Src.Addr() {
		case rnicIP:
			d = &ws.Rnic
		case peerIP:
			d = &ws.Peer
		default:
			continue
		}
		d.Frames++
		if corruptedByRnic(fr.Comments) {
			// rnic's own faults (--faults) damaged it on purpose: its
			// engine sent it sound.
			continue
		}
		switch {
		case r.Kind == decode.KindUnknown || r.Kind == decode.KindRoCE && !r.ICRCOK:
			d.Bad++
		case r.Kind == decode.KindRoCE:
			countRoCE(d, &r.Frame, r.Src.Addr(), r.Dst.Addr(), seen)
		}
	}
	return ws
}

// countRoCE adds one sound RoCEv2 frame: a request PSN sent again is a
// retransmission, an AETH that is not an ACK a NAK.
func countRoCE(d *DirStats, f *wire.Frame, src, dst netip.Addr, seen map[psnKey]struct{}) {
	info := f.Packet.Info()
	if info == nil {
		return
	}
	if info.Response {
		if info.Has(wire.HdrAETH) && f.Packet.AETH().Syndrome().Type() != wire.AckTypeACK {
			d.NAKs++
		}
		return
	}
	bth := f.Packet.BTH()
	k := psnKey{src: src, dst: dst, destQP: bth.DestQP(), psn: bth.PSN()}
	if _, dup := seen[k]; dup {
		d.Retrans++
		return
	}
	seen[k] = struct{}{}
}

// injectedCorrupt is the note rnic's fault injection (--faults) leaves
// in its capture on a frame it corrupted. (A frame it lost is in the
// capture too, noted "rnic: lost": rnic sent it, and resends it.)
const injectedCorrupt = "rnic: corrupted"

// corruptedByRnic says a frame's notes say rnic's faults corrupted it.
func corruptedByRnic(comments []string) bool {
	for _, c := range comments {
		if strings.Contains(c, injectedCorrupt) {
			return true
		}
	}
	return false
}
