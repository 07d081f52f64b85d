// The virtio-net header: on a TAP opened with IFF_VNET_HDR every frame read
// or written is prefixed by a struct virtio_net_hdr (linux/virtio_net.h),
// the same one a virtio NIC and its driver exchange. It is how the NIC and
// the kernel hand each other TCP super-segments (host segmentation offload,
// TSO/GSO on send, GRO/LRO on receive) and partial checksums.
//
//	 0        1        2        4        6          8           10
//	+--------+--------+--------+--------+----------+-----------+
//	| flags  |gso_type|hdr_len |gso_size|csum_start|csum_offset|
//	+--------+--------+--------+--------+----------+-----------+
//
// The 16-bit fields are little-endian: the Device sets TUNSETVNETLE, so
// the layout does not depend on the host's byte order.
//
// flags NEEDS_CSUM: the checksum at csum_start+csum_offset holds only the
// pseudo-header sum; the receiver finishes it over csum_start..end (Linux's
// CHECKSUM_PARTIAL). DATA_VALID: the kernel already verified the checksum.
// gso_type TCPV4/TCPV6: the frame is one TCP super-segment with one set of
// headers (hdr_len bytes) whose payload stands for segments of gso_size
// bytes each.

package tap

import (
	"encoding/binary"
	"errors"

	"gvisor.dev/gvisor/pkg/tcpip/checksum"
)

// vnetHdrLen is sizeof(struct virtio_net_hdr), the size the Device sets with
// TUNSETVNETHDRSZ.
const vnetHdrLen = 10

// virtio_net_hdr flags and gso types (linux/virtio_net.h).
const (
	vnetFlagNeedsCsum = 1
	vnetFlagDataValid = 2
	vnetGSONone       = 0
	vnetGSOTCPv4      = 1
	vnetGSOTCPv6      = 4
)

// maxGSOFrame is the longest frame the kernel may hand a TAP with TSO on:
// an IP packet of 64 KiB (the kernel's GSO_MAX_SIZE for a TAP, IPv6's
// payload length plus its header) behind an Ethernet and an 802.1Q header.
const maxGSOFrame = ethHeaderLen + 4 + ipv6HeaderLen + 65535

// gsoMaxPacket is the largest IP packet the NIC hands the kernel as one
// super-segment: an IPv4 packet's total length is 16 bits.
const gsoMaxPacket = 65535

// VnetHdr is one frame's virtio_net_hdr.
type VnetHdr struct {
	Flags      uint8
	GSOType    uint8
	HdrLen     uint16 // Ethernet + IP + TCP header bytes of a super-segment
	GSOSize    uint16 // payload bytes per wire segment (the MSS)
	CsumStart  uint16 // where the partial checksum's range begins, from the frame's start
	CsumOffset uint16 // where the checksum field is, from CsumStart
}

// errVnet is why a virtio_net_hdr is refused (it is counted and its frame
// dropped).
var errVnet = errors.New("tap: malformed virtio_net_hdr")

// parseVnetHdr decodes the header at the start of b (at least vnetHdrLen
// bytes).
func parseVnetHdr(b []byte) VnetHdr {
	return VnetHdr{
		Flags:      b[0],
		GSOType:    b[1],
		HdrLen:     binary.LittleEndian.Uint16(b[2:]),
		GSOSize:    binary.LittleEndian.Uint16(b[4:]),
		CsumStart:  binary.LittleEndian.Uint16(b[6:]),
		CsumOffset: binary.LittleEndian.Uint16(b[8:]),
	}
}

// put encodes v into b[:vnetHdrLen].
func (v VnetHdr) put(b []byte) {
	b[0], b[1] = v.Flags, v.GSOType
	binary.LittleEndian.PutUint16(b[2:], v.HdrLen)
	binary.LittleEndian.PutUint16(b[4:], v.GSOSize)
	binary.LittleEndian.PutUint16(b[6:], v.CsumStart)
	binary.LittleEndian.PutUint16(b[8:], v.CsumOffset)
}

// check validates v against the frame it came with: only the flags and
// gso types the Device asked for (TUNSETOFFLOAD: CSUM, TSO4, TSO6), a
// checksum range inside the frame, and a TCP super-segment only on the
// matching EtherType with a segment size.
func (v VnetHdr) check(frame []byte) error {
	if v.Flags&^(vnetFlagNeedsCsum|vnetFlagDataValid) != 0 {
		return errVnet
	}
	if v.Flags&vnetFlagNeedsCsum != 0 {
		start, at := int(v.CsumStart), int(v.CsumStart)+int(v.CsumOffset)
		if start < ethHeaderLen || at+2 > len(frame) {
			return errVnet
		}
	}
	if v.GSOType == vnetGSONone {
		return nil
	}
	if len(frame) < ethHeaderLen || v.GSOSize == 0 || v.Flags&vnetFlagNeedsCsum == 0 {
		return errVnet
	}
	et := binary.BigEndian.Uint16(frame[12:])
	switch {
	case v.GSOType == vnetGSOTCPv4 && et == etherTypeIPv4:
	case v.GSOType == vnetGSOTCPv6 && et == etherTypeIPv6:
	default:
		return errVnet
	}
	return nil
}

// Where a UDP and a TCP header keep their checksums.
const (
	udpChecksumOffset = 6
	tcpChecksumOffset = 16
)

// finishChecksum completes a partial checksum (NEEDS_CSUM, checked by
// check): the field holds the pseudo-header sum; the ones'-complement sum
// of everything from CsumStart to the end, that field included, is folded
// and stored inverted. A UDP result of 0 is sent as 0xFFFF (RFC 768: 0
// means "no checksum"); any other stays as computed: a TCP checksum of
// 0xFFFF for a sum of zero is what RFC 1624 warns of, and Wireshark
// flags it.
func finishChecksum(frame []byte, v VnetHdr) {
	at := int(v.CsumStart) + int(v.CsumOffset)
	sum := ^checksum.Checksum(frame[v.CsumStart:], 0)
	if sum == 0 && v.CsumOffset == udpChecksumOffset {
		sum = 0xFFFF
	}
	binary.BigEndian.PutUint16(frame[at:], sum)
}
