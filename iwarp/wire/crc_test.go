package wire

import (
	"encoding/hex"
	"testing"
)

// FPDUs of siw-rping-mpacrc (frames 11-13: Send, Read Request, Read
// Response), CRC negotiated; each verifies with the CRC little-endian.
var crcVectors = []string{
	"00224143000000000000000000000001000000000000555f72c0843030b7e70000000040b83797fd",
	"002e414100000000000000010000000100000000081a5e000000560d2b4921700000004030b7e7000000555f72c08430706eed08",
	"004ec142081a5e000000560d2b49217072646d612d70696e672d303a204142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f606162636465666768696a6b6c6d6e6f70717200e92fcd62",
}

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCRCCheckValue(t *testing.T) {
	// The CRC-32C check value (RFC 3720 Appendix B.4 and every CRC catalogue).
	if got := CRC([]byte("123456789")); got != 0xE3069283 {
		t.Fatalf("CRC-32C(123456789) = %08x, want e3069283", got)
	}
	if got := UpdateCRC(CRC([]byte("1234")), []byte("56789")); got != 0xE3069283 {
		t.Fatalf("incremental CRC = %08x", got)
	}
}

func TestCRCVectors(t *testing.T) {
	for i, v := range crcVectors {
		b := mustHex(t, v)
		f, n, err := ParseFPDU(b)
		if err != nil || n != len(b) {
			t.Fatalf("vector %d: ParseFPDU = %d, %v", i, n, err)
		}
		if f.ComputeCRC() != f.WireCRC() {
			t.Errorf("vector %d: wire %08x, computed %08x", i, f.WireCRC(), f.ComputeCRC())
		}
		// The same bytes read big-endian would not verify: the byte order
		// is part of the contract.
		be := uint32(b[n-4])<<24 | uint32(b[n-3])<<16 | uint32(b[n-2])<<8 | uint32(b[n-1])
		if be == f.ComputeCRC() {
			t.Errorf("vector %d verifies big-endian too", i)
		}
		out := AppendFPDU(nil, Framing{CRC: true}, 0, f.ULPDU(), nil)
		if string(out) != string(b) {
			t.Errorf("vector %d: re-encoded\n got %x\nwant %x", i, out, b)
		}
	}
}
