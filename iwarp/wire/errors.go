package wire

// Error is why bytes from the wire failed to parse. It is a small integer so
// that the receive path can return it as an error without allocating, index a
// counter array with it, and look up the Terminate message the specifications
// require in answer (Error.Terminate).
//
// ErrIncomplete is not a failure: it says the bytes end before the frame does
// and more must be read from the stream.
type Error uint8

// Parse errors. Each one names a drop counter.
const (
	_ Error = iota
	// ErrIncomplete: the frame is not yet complete; feed more bytes.
	ErrIncomplete
	// ErrMPABadKey: the first 16 bytes are neither "MPA ID Req Frame" nor
	// "MPA ID Rep Frame" (RFC 5044 §7.1.1).
	ErrMPABadKey
	// ErrMPAPrivateData: PD_Length exceeds 512 (RFC 5044 §7.1.1).
	ErrMPAPrivateData
	// ErrMPAEnhanced: an enhanced (S, Rev 2) frame whose private data is too
	// short for the IRD and ORD words (RFC 6581 §9.2).
	ErrMPAEnhanced
	// ErrFPDUTooLong: ULPDU_Length exceeds the largest ULPDU this receiver
	// accepts; MPA framing is lost from here on.
	ErrFPDUTooLong
	// ErrBadMarker: a marker's FPDUPTR does not point at the start of the
	// FPDU it lies in (RFC 5044 §4.3).
	ErrBadMarker
	// ErrBadCRC: the FPDU's CRC-32C does not match (RFC 5044 §4.4).
	ErrBadCRC
	// ErrTruncated: the ULPDU (or a Terminate body) is shorter than its
	// headers.
	ErrTruncated
	// ErrDDPVersionTagged and ErrDDPVersionUntagged: DV is not 1
	// (RFC 5041 §4.1); the Terminate code depends on the T flag.
	ErrDDPVersionTagged
	ErrDDPVersionUntagged
	// ErrRDMAPVersion: RV is not 1 (RFC 5040 §4.1).
	ErrRDMAPVersion
	// ErrBadOpcode: a reserved RDMAP opcode, or a T flag that does not
	// match the opcode (RFC 5040 §4.2, RFC 7306 §4.2).
	ErrBadOpcode
	// ErrBadQN: an untagged segment on a queue its opcode does not use
	// (RFC 5040 §4.2, RFC 7306 §4.2).
	ErrBadQN
	// ErrBadLength: a fixed-size RDMAP header (Read Request, atomics,
	// immediate data) of the wrong size, or bytes after a Terminate's
	// declared headers.
	ErrBadLength
	numErrors
)

var errorNames = [numErrors]string{
	ErrIncomplete:         "incomplete",
	ErrMPABadKey:          "mpa_bad_key",
	ErrMPAPrivateData:     "mpa_private_data_too_long",
	ErrMPAEnhanced:        "mpa_enhanced_too_short",
	ErrFPDUTooLong:        "fpdu_too_long",
	ErrBadMarker:          "mpa_bad_marker",
	ErrBadCRC:             "mpa_crc_err",
	ErrTruncated:          "truncated",
	ErrDDPVersionTagged:   "ddp_version_tagged",
	ErrDDPVersionUntagged: "ddp_version_untagged",
	ErrRDMAPVersion:       "rdmap_version",
	ErrBadOpcode:          "rdmap_bad_opcode",
	ErrBadQN:              "ddp_bad_qn",
	ErrBadLength:          "bad_length",
}

// errorTerm is the Terminate code the receiver sends for each error.
var errorTerm = [numErrors]TermCode{
	ErrMPABadKey:          TermLLPInvalidReqRep,
	ErrMPAPrivateData:     TermLLPInvalidReqRep,
	ErrMPAEnhanced:        TermLLPInvalidReqRep,
	ErrFPDUTooLong:        TermDDPUntaggedTooLong, // as Chelsio T4 reports a PDU length error
	ErrBadMarker:          TermLLPMarkerMismatch,
	ErrBadCRC:             TermLLPCRC,
	ErrTruncated:          TermRDMAPOpUnspecified,
	ErrDDPVersionTagged:   TermDDPTaggedVersion,
	ErrDDPVersionUntagged: TermDDPUntaggedVersion,
	ErrRDMAPVersion:       TermRDMAPVersion,
	ErrBadOpcode:          TermRDMAPUnexpectedOpcode,
	ErrBadQN:              TermDDPUntaggedInvalidQN,
	ErrBadLength:          TermRDMAPOpUnspecified,
}

// NumErrors is one more than the largest Error value, for counter arrays.
const NumErrors = int(numErrors)

func (e Error) Error() string {
	if int(e) < len(errorNames) && errorNames[e] != "" {
		return "iwarp: " + errorNames[e]
	}
	return "iwarp: unknown error"
}

// Counter is the name of the drop counter for e.
func (e Error) Counter() string {
	if int(e) < len(errorNames) && errorNames[e] != "" {
		return errorNames[e]
	}
	return "unknown"
}

// Terminate returns the Terminate code a receiver reports for e, and false
// for ErrIncomplete (which is no error). The MPA setup errors map to LLP code
// 0x04; before full operation there is no FPDU stream to carry a Terminate,
// so the engine may only close the connection (RFC 5044 §7.1.2).
func (e Error) Terminate() (TermCode, bool) {
	if e == ErrIncomplete || int(e) >= len(errorTerm) || e == 0 {
		return 0, false
	}
	return errorTerm[e], true
}
