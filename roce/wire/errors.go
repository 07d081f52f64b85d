package wire

// Error is why a frame or packet failed to decode. It is a small integer so
// that the receive path can return it as an error without allocating and
// index a counter array with it.
type Error uint8

// Decode errors. Each one names a drop counter.
const (
	_               Error = iota
	ErrTruncated          // shorter than its headers say
	ErrNotIP              // EtherType is neither IPv4 nor IPv6
	ErrBadIPHeader        // IP version, header length or total length inconsistent
	ErrIPFragment         // IPv4 fragment: RoCEv2 is never fragmented
	ErrNotUDP             // IP protocol / next header is not UDP
	ErrBadUDPLength       // UDP length disagrees with the IP payload length
	ErrNotRoCEPort        // UDP destination port is not the RoCEv2 port
	ErrBadOpcode          // reserved or unsupported BTH opcode
	ErrBadTVer            // BTH transport header version is not 0
	ErrBadPad             // PadCnt larger than the payload, or set on an opcode without payload
	ErrBadLength          // packet shorter than its opcode's headers plus ICRC
	ErrBadICRC            // invariant CRC mismatch
	numErrors
)

var errorNames = [numErrors]string{
	ErrTruncated:    "truncated",
	ErrNotIP:        "not_ip",
	ErrBadIPHeader:  "bad_ip_header",
	ErrIPFragment:   "ip_fragment",
	ErrNotUDP:       "not_udp",
	ErrBadUDPLength: "bad_udp_length",
	ErrNotRoCEPort:  "not_roce_port",
	ErrBadOpcode:    "bad_opcode",
	ErrBadTVer:      "bad_tver",
	ErrBadPad:       "bad_pad",
	ErrBadLength:    "bad_length",
	ErrBadICRC:      "icrc_err",
}

// NumErrors is one more than the largest Error value, for counter arrays.
const NumErrors = int(numErrors)

func (e Error) Error() string {
	if int(e) < len(errorNames) && errorNames[e] != "" {
		return "roce: " + errorNames[e]
	}
	return "roce: unknown error"
}

// Counter is the name of the drop counter for e (rxe's name where one exists).
func (e Error) Counter() string {
	if int(e) < len(errorNames) {
		return errorNames[e]
	}
	return "unknown"
}
