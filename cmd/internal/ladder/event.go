package ladder

import (
	"net/netip"
	"time"
)

// Class is the role of a frame; each has one colour.
type Class uint8

// Classes.
const (
	ClassRequest  Class = iota // RoCE and RDMAP requests: SEND, WRITE, READ request, atomics
	ClassResponse              // READ responses, atomic responses
	ClassACK                   // RoCE ACKs
	ClassNAK                   // RoCE NAKs (the label carries the code)
	ClassRNR                   // RoCE RNR NAKs
	ClassSetup                 // IB CM MADs, MPA Request and Reply
	ClassTCP                   // TCP segments that completed no FPDU or MPA frame
	ClassUnknown               // frames to the RoCE port, or MPA stream bytes, that do not decode
	numClasses
)

var classNames = [numClasses]string{"request", "response", "ack", "nak", "rnr", "setup", "tcp", "unknown"}

// String is the class's name, used as a CSS class and in data attributes.
func (c Class) String() string { return classNames[c] }

// Event is one frame of the diagram.
type Event struct {
	Frame int           // frame number (1-based, as Wireshark counts)
	Time  time.Duration // since the first frame
	Src   netip.AddrPort
	Dst   netip.AddrPort
	// SrcHost and DstHost name the ends: the IP address, or the MAC
	// address of a frame without IP.
	SrcHost, DstHost string
	// SrcQP and DstQP are the QPs at each end, -1 when unknown (iWARP,
	// TCP, or a RoCE source QP that could not be paired).
	SrcQP, DstQP int

	Class  Class
	Retx   bool // a request whose PSN was already sent to this QP
	Dup    bool // an ACK or response whose PSN and opcode were already sent
	BadCRC bool // ICRC or MPA CRC does not verify
	FPDU   bool // a TCP segment that completed at least one FPDU
	Lost   bool // the link lost it (simulator ground truth)
	// Mark is true for an engine event (a timer expiry, an RNR wait)
	// drawn between the frames: Frame is 0, Label says what happened.
	Mark bool
	Note string

	// Label is the text above the arrow (the message), Sub the text
	// below it (its header fields), both taken from the decode line;
	// Decode the full rnic decode lines (one per record the frame
	// carries); JSON their JSON objects (one per line).
	Label  string
	Sub    string
	Decode string
	JSON   string
	// Spec names the section defining the opcode, SpecURL links to it.
	Spec, SpecURL string

	// run is the key of a run of Middle packets this frame belongs to
	// ("" when it is not a Middle packet).
	run     string
	psn     int64 // RoCE PSN, -1 otherwise
	aeth    uint8 // RoCE AETH syndrome, when there is one
	records int   // iWARP records the frame completed
}
