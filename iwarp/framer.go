package iwarp

import "github.com/rnic/rnic/iwarp/wire"

// CaptureFramer is the stream.TeeConfig.Framer of an iWARP connection
// without markers (wire.MessageLen). With it a capture's TCP segments
// start at message boundaries, which tshark's MPA dissector needs
// (stream.TeeConfig.Framer).
func CaptureFramer(p []byte) int { return wire.MessageLen(p) }
