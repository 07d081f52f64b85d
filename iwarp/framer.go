package iwarp

import (
	"encoding/binary"

	"github.com/rnic/rnic/iwarp/wire"
)

// CaptureFramer is the stream.TeeConfig.Framer of an iWARP connection
// without markers: an MPA Request or Reply is 20 octets plus its private
// data, an FPDU 2 + ULPDU_Length + pad + CRC. With it a capture's TCP
// segments start at message boundaries, which tshark's MPA dissector needs
// (stream.TeeConfig.Framer).
func CaptureFramer(p []byte) int {
	const key = "MPA ID "
	if n := min(len(p), len(key)); string(p[:n]) == key[:n] {
		if len(p) < wire.MPAHeaderLen {
			return 0
		}
		return wire.MPAHeaderLen + int(binary.BigEndian.Uint16(p[18:20]))
	}
	if len(p) < wire.LengthFieldLen {
		return 0
	}
	return wire.FPDULen(int(binary.BigEndian.Uint16(p)))
}
