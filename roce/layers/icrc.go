package layers

import (
	"fmt"

	"github.com/gopacket/gopacket"
	glayers "github.com/gopacket/gopacket/layers"

	"github.com/rnic/rnic/roce/wire"
)

// ICRC helpers. The invariant CRC (IBTA Vol 1 Annex A17.3.3, computed by
// roce/wire/icrc.go) covers the IP and UDP headers as well as the transport
// packet, so neither the BTH decoder nor BTH.SerializeTo can handle it alone.

// ComputeICRC returns the ICRC the packet should carry, given the IP header
// (IPv4 with options, or the 40-byte IPv6 header) and the 8-byte UDP header
// it travelled in. ok is false if the BTH was not decoded or a header is too
// short to hold its masked fields.
func (b *BTH) ComputeICRC(ip, udp []byte) (icrc uint32, ok bool) {
	if len(b.pkt) < wire.BTHLen+wire.ICRCLen || len(udp) < wire.UDPLen || len(ip) < 1 {
		return 0, false
	}
	switch ip[0] >> 4 {
	case 4:
		if len(ip) < wire.IPv4Len {
			return 0, false
		}
	case 6:
		if len(ip) < wire.IPv6Len {
			return 0, false
		}
		ip = ip[:wire.IPv6Len]
	default:
		return 0, false
	}
	return wire.ICRC(ip, udp[:wire.UDPLen], b.pkt[:len(b.pkt)-wire.ICRCLen]), true
}

// VerifyICRC reports whether the decoded packet's ICRC is right for the IP
// and UDP headers given (e.g. ip4.Contents and udp.Contents on the
// DecodingLayerParser path).
func (b *BTH) VerifyICRC(ip, udp []byte) bool {
	c, ok := b.ComputeICRC(ip, udp)
	return ok && c == b.ICRC
}

// VerifyICRC reports whether a gopacket.Packet holding a RoCEv2 BTH carries
// the right ICRC. It is false when the packet has no BTH, UDP or IP layer.
func VerifyICRC(pkt gopacket.Packet) bool {
	bth, _ := pkt.Layer(LayerTypeBTH).(*BTH)
	udp, _ := pkt.Layer(glayers.LayerTypeUDP).(*glayers.UDP)
	nl := pkt.NetworkLayer()
	if bth == nil || udp == nil || nl == nil {
		return false
	}
	return bth.VerifyICRC(nl.LayerContents(), udp.Contents)
}

// SealICRC computes the ICRC of a serialized RoCEv2 frame (Ethernet,
// optional 802.1Q, IPv4 or IPv6, UDP to port 4791) and writes it into the
// frame's last four transport bytes. A non-zero UDP checksum is recomputed
// afterwards, since it covers the ICRC (the ICRC masks the checksum, so the
// order is ICRC first). This is the step gopacket.SerializeLayers cannot do:
//
//	gopacket.SerializeLayers(buf, opts, &eth, &ip4, &udp, &bth, &reth, gopacket.Payload(p))
//	err := layers.SealICRC(buf.Bytes())
func SealICRC(frame []byte) error {
	var f wire.Frame
	if err := f.Decode(frame, 0); err != nil {
		return fmt.Errorf("roce/layers: seal ICRC: %w", err)
	}
	f.Seal()
	return nil
}
