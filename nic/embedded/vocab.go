// What a program names from the layers under the backends when it
// describes a NIC (where its frames go, where they are recorded, what
// carries its streams), under this package's names, so that programs
// import the verbs API and the backends, not the engines and transports.

package embedded

import (
	"io"

	"github.com/rnic/rnic/roce"
	"github.com/rnic/rnic/transport"
	"github.com/rnic/rnic/transport/pcap"
	"github.com/rnic/rnic/transport/stream"
)

// PcapWriter records a NIC's frames in a pcap file (UDPConfig.Pcap,
// IWARPConfig.Pcap, tapnic.Config.Pcap).
type PcapWriter = pcap.Writer

// Link carries a RoCEv2 NIC's frames (UDPConfig.Link: tests run whole
// NICs on an in-memory pipe instead of the kernel's UDP).
type Link = transport.Endpoint

// StreamNetwork carries an iWARP NIC's TCP streams (IWARPConfig.Network):
// kernel TCP, a TAP-mode NIC's own TCP (tapnic.NIC.Streams), or a
// simulated network.
type StreamNetwork = stream.Network

// NewPcapWriter writes a pcap file header to w and returns a writer for
// a NIC's frames.
func NewPcapWriter(w io.Writer) (*PcapWriter, error) { return pcap.NewWriter(w) }

// StreamConn is one of an iWARP NIC's TCP streams (IWARPConfig.Wrap).
type StreamConn = stream.Conn

// TraceEvent is one event of a RoCEv2 engine's trace
// (UDPConfig.TraceEvents): what a narrating program shows next to the
// frames.
type TraceEvent = roce.TraceEvent
