// Package wire holds the iWARP wire format: MPA connection setup and framing
// over TCP (RFC 5044, enhanced by RFC 6581), DDP segments (RFC 5041) and the
// RDMAP messages they carry (RFC 5040, extended by RFC 7306 with atomics and
// immediate data), the Terminate message with its table of error codes, and
// the CRC-32C of MPA.
//
// The layering on the wire, for one direction of a TCP connection:
//
//	TCP byte stream
//	└─ MPA Request or Reply frame (once, at the start)           mpa.go
//	└─ FPDU, FPDU, ... (framed ULPDUs, optional markers, CRC)    fpdu.go, marker.go, deframe.go, crc.go
//	   └─ ULPDU = DDP segment: DDP header (tagged or untagged)   ddp.go
//	      └─ RDMAP header (Read Request, Terminate, atomics,     rdmap.go, terminate.go
//	         immediate data), then the payload                   opcode.go says which
//
// Headers are views over the bytes in the style of gVisor's header package:
// a view is a byte slice with accessors, so decoding allocates nothing, and
// every read is bounds-checked by the view's length, which the decoder has
// already validated. Each view has a Fields struct (the decoded form) and an
// Encode or Append function that writes it, so that decoding and encoding
// round-trip byte for byte.
//
// MPA is a byte-stream protocol: an FPDU may arrive split across TCP segments
// at any byte (Linux siw, for one, often sends the 4-byte CRC trailer as a
// segment of its own). ParseMPAFrame reports "need more bytes" (ErrIncomplete)
// apart from "invalid"; the Deframer takes the stream in chunks of any size
// and yields whole FPDUs, as views into the caller's chunk when an FPDU lies
// entirely inside it, else from one bounded internal buffer.
//
// Decoding returns Error codes (a uint8 type implementing error, so returning
// one allocates nothing). Every code names a drop counter and, where the
// specifications require the receiver to send a Terminate message, the
// Terminate code (TermCode) to send. The package does no I/O and starts no
// goroutines.
package wire
