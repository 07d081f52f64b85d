package wire

import (
	"bytes"
	"encoding/hex"
	"net/netip"
	"strings"
	"testing"
)

// Vectors (transport/tsharktest/README.md, "CRC rules"): a real
// ConnectX-4 Lx CNP (TOS 0xC2, BECN set), published with scapy's RoCE
// tests, and a synthetic RC SEND Only whose ICRC tshark and rxe agree on.
var icrcVectors = []struct {
	name, hex string
	icrc      uint32 // as the wire bytes read little-endian
}{
	{"cx4-cnp", "e41d2dab2bc27cfe90643b32080045c2003c718c4000401191610a0011010a00" +
		"1201000012b7002800008100ffff400001180000000000000000000000000000" +
		"00000000000082fd002a", 0x2a00fd82},
	{"synthetic-send", "02000000000202000000000108004500003c000040004011b6adc0000201c000" +
		"0202c00012b7002800000400ffff000000118000000168656c6c6f2c20726f63" +
		"6576322121213da331f4", 0xf431a33d},
}

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestICRCVectors(t *testing.T) {
	for _, v := range icrcVectors {
		t.Run(v.name, func(t *testing.T) {
			b := mustHex(t, v.hex)
			var f Frame
			if err := f.Decode(b, 0); err != nil {
				t.Fatalf("decode: %v", err)
			}
			if got := f.Packet.WireICRC(); got != v.icrc {
				t.Fatalf("wire ICRC %08x, vector says %08x", got, v.icrc)
			}
			if got := f.ComputeICRC(); got != v.icrc {
				t.Fatalf("computed ICRC %08x, want %08x", got, v.icrc)
			}
			// Every byte outside the masked fields is covered: flipping
			// any one of them must break the ICRC; flipping a masked one
			// must not.
			masked := map[int]bool{}
			l3 := 14
			for _, o := range []int{1, 8, 10, 11} { // TOS, TTL, checksum
				masked[l3+o] = true
			}
			masked[l3+20+6], masked[l3+20+7] = true, true // UDP checksum
			masked[l3+20+8+4] = true                      // BTH byte 4
			for i := l3; i < len(b)-4; i++ {
				c := append([]byte(nil), b...)
				c[i] ^= 0x01
				var g Frame
				if err := g.Decode(c, 0); err != nil {
					continue // the flip made the frame undecodable
				}
				if ok := g.VerifyICRC(); ok != masked[i] {
					t.Errorf("byte %d flipped: verify=%v, masked=%v", i, ok, masked[i])
				}
			}
		})
	}
}

// TestICRCScapyUC is scapy's UC SEND vector (test/contrib/roce.uts): built
// from its fields, the frame's IPv4 checksum is 0xb4d5 and its ICRC
// 0x78f353f3, as scapy computes them.
func TestICRCScapyUC(t *testing.T) {
	mac := [6]byte{0x24, 0x8a, 0x07, 0xa8, 0xfa, 0x22}
	e := Encap{DstMAC: mac, SrcMAC: mac, TOS: 0x1, IPID: 1144, DF: true, TTL: 64,
		Src: netip.MustParseAddr("192.168.0.7"), Dst: netip.MustParseAddr("192.168.0.7"),
		SrcPort: 49152, DstPort: UDPPort}
	h := Headers{BTH: BTHFields{Opcode: UCSendOnly, MigReq: true, PKey: 0xffff, DestQP: 211, PSN: 13571856}}
	payload := []byte("F0\x81\x8b\xe2\x895\xd9\x0e\x9a\x95PT\x01\xbe\x88^P") // + 2 pad bytes
	b := AppendFrame(nil, &e, &h, payload)
	if len(b) != 14+64 {
		t.Fatalf("frame is %d bytes, want 78 (IP length 64)", len(b))
	}
	if c := uint16(b[24])<<8 | uint16(b[25]); c != 0xb4d5 {
		t.Fatalf("IPv4 checksum %#x, want 0xb4d5", c)
	}
	var f Frame
	if err := f.Decode(b, 0); err != nil {
		t.Fatal(err)
	}
	if f.Packet.BTH().PadCnt() != 2 {
		t.Fatal("pad count")
	}
	// scapy's icrc field reads the wire bytes big-endian (its CX4 vector
	// is 0x82fd002a for wire bytes 82 fd 00 2a).
	if got := b[len(b)-4:]; !bytes.Equal(got, []byte{0x78, 0xf3, 0x53, 0xf3}) || !f.VerifyICRC() {
		t.Fatalf("ICRC wire bytes %x, want 78f353f3", got)
	}
}
