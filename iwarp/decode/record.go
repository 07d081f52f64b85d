package decode

import (
	"net/netip"
	"time"

	"github.com/rnic/rnic/iwarp/wire"
)

// Kind is what a Record reports.
type Kind uint8

// Kinds of records.
const (
	// KindMPA is an MPA Request or Reply (connection setup). It is not an
	// FPDU and counts nothing.
	KindMPA Kind = iota + 1
	// KindFPDU is an FPDU whose ULPDU decodes as a DDP segment carrying
	// an RDMAP message; it counts in iwarp (and in crc_bad when its
	// negotiated CRC does not verify).
	KindFPDU
	// KindUnknown is payload of an MPA stream that does not decode; it
	// counts in unknown. Reason says why.
	KindUnknown
)

// Reasons of KindUnknown records that are not wire.Error counter names.
// The others are the counter names of the wire.Error that DDP/RDMAP
// decoding (ddp_version_tagged, rdmap_bad_opcode, ddp_bad_qn, truncated,
// bad_length, ...), deframing (fpdu_too_long, mpa_bad_marker) or MPA
// frame parsing (mpa_private_data_too_long, mpa_enhanced_too_short)
// returned.
const (
	// ReasonGap: TCP octets of the stream are missing from the capture
	// (a segment not captured, cut by the snap length, or an IP
	// fragment); Bytes is how many.
	ReasonGap = "tcp_gap"
	// ReasonIncompleteFPDU: the stream ended (FIN, RST or the end of the
	// capture) inside an FPDU; Bytes is how many of its octets are there.
	ReasonIncompleteFPDU = "incomplete_fpdu"
	// ReasonIncompleteMPA: the stream ended inside its MPA Request or
	// Reply; Bytes is how many of its octets are there.
	ReasonIncompleteMPA = "incomplete_mpa"
	// ReasonBadKey: in a connection where the other direction began with
	// an MPA frame, this direction began with something else.
	ReasonBadKey = "mpa_bad_key"
	// ReasonNotReply: both directions began with the same kind of MPA
	// frame (two Requests or two Replies); reported for the second.
	ReasonNotReply = "mpa_not_reply"
	// ReasonRejected: payload after a Reply that rejected the connection.
	ReasonRejected = "mpa_rejected"
	// ReasonNotNegotiated: payload after this direction's MPA frame while
	// the other direction's frame never came (or too much of it before
	// the frame did); Bytes is how many octets were held.
	ReasonNotNegotiated = "mpa_not_negotiated"
)

// Record is one line of output: an MPA frame, an FPDU, or a problem. The
// views it holds (MPA, Segment) are valid only during the emit call that
// passes it.
type Record struct {
	Kind  Kind
	Index int           // frame number in the file (1-based, as Wireshark counts); see doc.go for which frame
	Time  time.Duration // since the first frame of the file

	// The TCP direction: sender and receiver, and the VLAN ID of its
	// first frame (-1 when untagged).
	Src, Dst netip.AddrPort
	VLAN     int

	// Seq is the relative TCP sequence number (as Wireshark shows it: 1
	// is the first octet after the SYN) of the record's first octet: the
	// MPA frame, the FPDU, or where the problem starts.
	Seq uint64

	// KindMPA: the frame.
	MPA wire.MPAFrame

	// FPDU is true for KindFPDU and for a KindUnknown FPDU whose ULPDU
	// does not decode; then the fields below are set.
	FPDU     bool
	Segment  wire.Segment // KindFPDU only: the decoded ULPDU
	WireLen  int          // stream octets of the FPDU (markers included)
	ULPDULen int
	PadLen   int
	CRCOn    bool   // CRCs were negotiated for this direction
	CRCOK    bool   // the CRC verifies (true when CRCOn is false)
	CRC      uint32 // the CRC field as received (wire.GetCRC convention)
	Ctl      int    // KindUnknown FPDU: the ULPDU's first two octets (DDP and RDMAP control), -1 if absent

	// KindUnknown.
	Reason string
	Bytes  int64 // octets involved, as the Reason says
}

// BadCRC reports whether r is an FPDU whose negotiated CRC does not verify:
// what crc_bad counts (whether or not its ULPDU decodes).
func (r *Record) BadCRC() bool { return r.FPDU && r.CRCOn && !r.CRCOK }
