package wire

import "encoding/binary"

// MessageLen is the length of the MPA message at the start of p, a
// connection's byte stream without markers: an MPA Request or Reply is 20
// octets plus its private data, an FPDU 2 + ULPDU_Length + pad + CRC. It
// is 0 when p is too short to tell. It cuts a captured or observed stream
// into messages (streamcap.TeeConfig.Framer).
func MessageLen(p []byte) int {
	const key = "MPA ID "
	if n := min(len(p), len(key)); string(p[:n]) == key[:n] {
		if len(p) < MPAHeaderLen {
			return 0
		}
		return MPAHeaderLen + int(binary.BigEndian.Uint16(p[18:20]))
	}
	if len(p) < LengthFieldLen {
		return 0
	}
	return FPDULen(int(binary.BigEndian.Uint16(p)))
}
