package wire

import (
	"encoding/binary"
	"hash/crc32"
)

// The RoCEv2 Invariant CRC, IBTA Vol 1 Annex A17.3.3 (and §7.8.1 for the IB
// original), computed as Linux rxe does; transport/tsharktest/README.md,
// "CRC rules", gives the rule with its test vectors.
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
// The masked headers are copied into a local array and fed through a
// slicing-by-8 update written here: eight bytes per step instead of one,
// and, unlike crc32.Update (whose argument escapes), the array stays on the
// stack, so decoding allocates nothing. The bulk (payload) goes through
// crc32.Update, which is hardware-accelerated.

var ieee = crc32.IEEETable

// crcSeed is the CRC-32 (Update convention) of the 8 bytes of 0xFF.
var crcSeed = crc32.ChecksumIEEE([]byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF})

// slicing8 are the tables of the slicing-by-8 CRC-32 (IEEE, reflected):
// slicing8[k][b] is the register after byte b followed by k zero bytes.
var slicing8 = func() (t [8][256]uint32) {
	t[0] = *ieee
	for i := 0; i < 256; i++ {
		for k := 1; k < 8; k++ {
			prev := t[k-1][i]
			t[k][i] = t[0][byte(prev)] ^ prev>>8
		}
	}
	return t
}()

// rawUpdate runs the un-inverted CRC register r over p.
func rawUpdate(r uint32, p []byte) uint32 {
	t := &slicing8
	for len(p) >= 8 {
		r ^= binary.LittleEndian.Uint32(p)
		r = t[0][p[7]] ^ t[1][p[6]] ^ t[2][p[5]] ^ t[3][p[4]] ^
			t[4][r>>24] ^ t[5][r>>16&0xFF] ^ t[6][r>>8&0xFF] ^ t[7][r&0xFF]
		p = p[8:]
	}
	for _, b := range p {
		r = t[0][byte(r)^b] ^ r>>8
	}
	return r
}

// maxMasked is the longest masked part: an IPv4 header with 40 bytes of
// options (IPv6's is 40 bytes), UDP, BTH.
const maxMasked = 60 + 8 + BTHLen

// ICRC computes the invariant CRC. ip is the whole IP header (IPv4 with any
// options, or the 40-byte IPv6 header), udp the 8-byte UDP header, and pkt the
// transport packet from the BTH through the pad, without the ICRC itself.
func ICRC(ip, udp, pkt []byte) uint32 {
	var m [maxMasked]byte
	n := copy(m[:60], ip)
	if n > 0 && m[0]>>4 == 6 {
		// Version nibble kept; traffic class and flow label all ones;
		// hop limit.
		m[0] |= 0x0F
		m[1], m[2], m[3], m[7] = 0xFF, 0xFF, 0xFF, 0xFF
	} else {
		// TOS, TTL, header checksum.
		m[1], m[8], m[10], m[11] = 0xFF, 0xFF, 0xFF, 0xFF
	}
	n += copy(m[n:n+8], udp)
	m[n-2], m[n-1] = 0xFF, 0xFF // UDP checksum
	n += copy(m[n:n+BTHLen], pkt)
	m[n-BTHLen+4] = 0xFF // FECN, BECN, resv6
	r := rawUpdate(^crcSeed, m[:n])
	return crc32.Update(^r, ieee, pkt[BTHLen:])
}

// GetICRC reads a wire ICRC (little-endian) from the last four bytes of b.
func GetICRC(b []byte) uint32 { return binary.LittleEndian.Uint32(b[len(b)-4:]) }

// PutICRC writes c as a wire ICRC into the last four bytes of b.
func PutICRC(b []byte, c uint32) { binary.LittleEndian.PutUint32(b[len(b)-4:], c) }
