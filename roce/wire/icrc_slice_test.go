package wire

import (
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

// icrcReference is the ICRC by its definition (Annex A17.3.3): CRC-32 over
// eight 0xFF bytes and a copy of the headers with the variant fields set
// to ones, then the rest of the packet.
func icrcReference(ip, udp, pkt []byte) uint32 {
	b := []byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}
	h := append([]byte(nil), ip...)
	if h[0]>>4 == 6 {
		h[0] |= 0x0F
		h[1], h[2], h[3], h[7] = 0xFF, 0xFF, 0xFF, 0xFF
	} else {
		h[1], h[8], h[10], h[11] = 0xFF, 0xFF, 0xFF, 0xFF
	}
	b = append(b, h...)
	b = append(b, udp[:6]...)
	b = append(b, 0xFF, 0xFF)
	b = append(b, pkt[:4]...)
	b = append(b, 0xFF)
	b = append(b, pkt[5:]...)
	return crc32.ChecksumIEEE(b)
}

// TestICRCDefinition compares ICRC with the definition over random IPv4
// headers (with and without options) and IPv6 headers and payloads of
// every length up to 70 bytes, so each path through the slicing-by-8
// update (whole words, tails) is taken.
func TestICRCDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 19))
	fill := func(b []byte) {
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
	}
	for _, ipLen := range []int{20, 24, 60, 40} {
		for n := 0; n <= 70; n++ {
			ip, udp, pkt := make([]byte, ipLen), make([]byte, 8), make([]byte, BTHLen+n)
			fill(ip)
			fill(udp)
			fill(pkt)
			ip[0] = 0x40 | byte(ipLen/4)
			if ipLen == 40 {
				ip[0] = 0x60 | ip[0]&0x0F
			}
			if got, want := ICRC(ip, udp, pkt), icrcReference(ip, udp, pkt); got != want {
				t.Fatalf("IP header %d bytes, payload %d: ICRC %08x, definition %08x", ipLen, n, got, want)
			}
		}
	}
}

func BenchmarkICRC(b *testing.B) {
	ip, udp, pkt := make([]byte, 20), make([]byte, 8), make([]byte, BTHLen+16)
	ip[0] = 0x45
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		ICRC(ip, udp, pkt)
	}
}
