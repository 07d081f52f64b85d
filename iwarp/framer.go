package iwarp

import (
	"encoding/binary"

	"github.com/rnic/rnic/iwarp/wire"
)

// NewCaptureFramer returns the capture framer of one direction of an iWARP
// connection (a streamcap.Framer, for streamcap.TeeConfig.NewFramer): with
// it a capture's TCP segments start at message boundaries, which tshark's
// MPA dissector needs. The direction's first message is its MPA Request or
// Reply (wire.MessageLen); FPDUs follow from the next octet, stream offset
// 0 of full operation. Markers, when the peer asked for them, sit at every
// 512th octet from there, the first in front of the first FPDU: the framer
// tells them by that first marker, whose four octets are zero (a reserved
// half and an FPDUPTR of 0), where an FPDU would begin with its nonzero
// ULPDU_Length.
func NewCaptureFramer() func(off int64, p []byte) int {
	f := &captureFramer{start: -1}
	return f.next
}

// captureFramer is one direction's framing state. Every field is set once,
// at the offset that decides it, and setting it again there gives the same
// value: the tee may ask about one offset more than once.
type captureFramer struct {
	start   int64 // stream offset of full operation (after the MPA frame); -1 until known
	markers bool  // the direction carries markers
}

func (f *captureFramer) next(off int64, p []byte) int {
	if f.start < 0 || off < f.start {
		n := wire.MessageLen(p)
		if n > 0 {
			f.start = off + int64(n)
		}
		return n
	}
	pos := uint32(off - f.start)
	if pos == 0 {
		if len(p) < wire.LengthFieldLen {
			return 0
		}
		f.markers = p[0] == 0 && p[1] == 0
	}
	if !f.markers {
		return wire.MessageLen(p)
	}
	hdr := 0
	if pos%wire.MarkerInterval == 0 {
		hdr = wire.MarkerLen // the marker in front of ULPDU_Length
	}
	if len(p) < hdr+wire.LengthFieldLen {
		return 0
	}
	return wire.MarkedLen(pos, wire.FPDULen(int(binary.BigEndian.Uint16(p[hdr:]))))
}
