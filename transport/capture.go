// What the transports need to know about captures without writing them:
// the timestamps of simulated runs and the recorder a simulated link writes
// its wire to. Writing pcap files is transport/pcap's job, kept apart so
// that the engines, which import this package, do not link gopacket.

package transport

import (
	"time"

	"github.com/rnic/rnic/transport/clock"
)

// PcapEpoch is the wall-clock instant that virtual time zero maps to in
// captures of simulated runs. It is a constant so that the same seed gives
// a byte-identical pcap.
var PcapEpoch = time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)

// VirtualTimestamps returns a timestamp source for a capture tee
// (pcap.Tee) that stamps frames PcapEpoch + clk.Now(), the convention of
// simulated runs.
func VirtualTimestamps(clk clock.Clock) func() time.Time {
	return func() time.Time { return PcapEpoch.Add(clk.Now()) }
}

// A FrameRecorder that is also a NoteRecorder keeps, with a frame the
// link did something to, a note saying what (a pcapng packet comment:
// "rnic: lost", "rnic: duplicate,delayed"), so that the capture file itself
// tells its reader, as SimConfig.Notes tells the program.
type NoteRecorder interface {
	WriteFrameNote(ts time.Time, frame []byte, note string) error
}

// NotePrefix starts every note a link writes in a capture.
const NotePrefix = "rnic: "

// FrameRecorder keeps frames with their timestamps: what a simulated link
// records of its wire (SimConfig.Pcap). A pcap.Writer is one; its errors
// are sticky, so the link ignores what WriteFrame returns.
type FrameRecorder interface {
	// WriteFrame records one frame seen at ts.
	WriteFrame(ts time.Time, frame []byte) error
	// Frames is how many frames have been recorded: after a WriteFrame,
	// the number of that frame's record (from 1), which SimConfig.Notes
	// is told.
	Frames() int
}
