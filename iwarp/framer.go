package iwarp

import "github.com/rnic/rnic/iwarp/wire"

// CaptureFramer is the streamcap.TeeConfig.Framer of an iWARP connection
// without markers (wire.MessageLen). With it a capture's TCP segments
// start at message boundaries, which tshark's MPA dissector needs
// (streamcap.TeeConfig.Framer).
func CaptureFramer(p []byte) int { return wire.MessageLen(p) }
