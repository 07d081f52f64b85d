package wire

import (
	"encoding/binary"
	"hash/crc32"
)

// The RoCEv2 Invariant CRC, IBTA Vol 1 Annex A17.3.3 (and §7.8.1 for the IB
// original); reference/protocols.md §1.4 and reference/wireshark.md §A8.
//
// It is CRC-32 with the IEEE 802.3 polynomial (not CRC-32C) over
//
//	8 bytes of 0xFF (the masked LRH that RoCEv2 lacks)
//	| IP header with the fields routers may change set to all ones
//	|   IPv4: TOS, TTL, header checksum
//	|   IPv6: traffic class, flow label, hop limit
//	| UDP header with the checksum set to all ones
//	| BTH with byte 4 (FECN, BECN, resv6) set to all ones
//	| extension headers, payload and pad,
//
// inverted and stored least significant byte first, like the Ethernet FCS.
//
// The masked bytes are fed through a byte-at-a-time table update rather than
// copied into a scratch buffer: a stack buffer handed to crc32.Update escapes
// to the heap, and decoding must not allocate. The bulk (payload) goes
// through crc32.Update, which is hardware-accelerated.

var ieee = crc32.IEEETable

// crcSeed is the CRC-32 (Update convention) of the 8 bytes of 0xFF.
var crcSeed = crc32.ChecksumIEEE([]byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF})

// raw* work on the un-inverted CRC register.
func rawByte(r uint32, b byte) uint32 { return ieee[byte(r)^b] ^ r>>8 }

func rawBytes(r uint32, p []byte) uint32 {
	for _, b := range p {
		r = rawByte(r, b)
	}
	return r
}

func rawFF(r uint32, n int) uint32 {
	for ; n > 0; n-- {
		r = rawByte(r, 0xFF)
	}
	return r
}

// ICRC computes the invariant CRC. ip is the whole IP header (IPv4 with any
// options, or the 40-byte IPv6 header), udp the 8-byte UDP header, and pkt the
// transport packet from the BTH through the pad, without the ICRC itself.
func ICRC(ip, udp, pkt []byte) uint32 {
	r := ^crcSeed
	if len(ip) > 0 && ip[0]>>4 == 6 {
		// Version nibble kept; traffic class and flow label all ones.
		r = rawByte(r, ip[0]|0x0F)
		r = rawFF(r, 3)
		r = rawBytes(r, ip[4:7]) // payload length, next header
		r = rawFF(r, 1)          // hop limit
		r = rawBytes(r, ip[8:40])
	} else {
		r = rawByte(r, ip[0])
		r = rawFF(r, 1)          // TOS
		r = rawBytes(r, ip[2:8]) // total length, ID, flags, fragment offset
		r = rawFF(r, 1)          // TTL
		r = rawByte(r, ip[9])    // protocol
		r = rawFF(r, 2)          // header checksum
		r = rawBytes(r, ip[12:])
	}
	r = rawBytes(r, udp[:6])
	r = rawFF(r, 2) // UDP checksum
	r = rawBytes(r, pkt[:4])
	r = rawFF(r, 1) // FECN, BECN, resv6
	r = rawBytes(r, pkt[5:BTHLen])
	return crc32.Update(^r, ieee, pkt[BTHLen:])
}

// GetICRC reads a wire ICRC (little-endian) from the last four bytes of b.
func GetICRC(b []byte) uint32 { return binary.LittleEndian.Uint32(b[len(b)-4:]) }

// PutICRC writes c as a wire ICRC into the last four bytes of b.
func PutICRC(b []byte, c uint32) { binary.LittleEndian.PutUint32(b[len(b)-4:], c) }
