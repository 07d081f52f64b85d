package wire

import "encoding/binary"

// MPA markers, RFC 5044 §4.2 (format) and §4.3 (placement).
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|           RESERVED            |            FPDUPTR            |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Markers let a receiver find FPDU boundaries in TCP segments that arrive
// out of order. When the receiver of a direction asked for them (M in its
// MPA Request or Reply, RFC 5044 §7.1.1), the sender inserts one every 512
// octets of TCP sequence space:
//
//   - Placement: counted from the first octet after the MPA Request (in the
//     initiator's direction) or Reply (in the responder's), the start of
//     full operation in that direction. The first marker sits at that octet,
//     in front of the first FPDU's ULPDU_Length, and the n-th at 512*n
//     octets after it (§4.3; Wireshark counts from the first FPDU's sequence
//     number the same way, and Intel's i40iw/irdma set their send marker
//     offset to the sequence number after the MPA frame). This package calls
//     that octet stream offset 0.
//   - FPDUPTR is the number of octets from the first octet of the FPDU the
//     marker lies in (its ULPDU_Length field, or the marker itself when the
//     marker sits at the FPDU's start) back to the marker's first octet. A
//     marker that falls exactly where an FPDU begins belongs to that FPDU
//     and reads 0. Its two low bits are zero on send and ignored on receive
//     (§4.2), which is harmless because FPDUs and markers are whole 32-bit
//     words and the stream starts on one.
//   - The reserved half is zero on send and ignored on receive.
//   - Markers are not counted in ULPDU_Length, do not change the pad (which
//     aligns 2+ULPDU_Length), and are covered by the FPDU's CRC, in wire
//     order, like every other octet of the FPDU before the CRC field (§4.4;
//     Wireshark checks it so).
//
// A receiver that processes the stream in order needs markers only to check
// them: a marker whose FPDUPTR disagrees with the framing is the LLP error
// "MPA Marker and ULPDU Length field mismatch" (ErrBadMarker). Linux siw does
// not support markers and refuses a peer that asks for them.

// Marker sizes.
const (
	MarkerLen      = 4
	MarkerInterval = 512
)

// Marker is a view of a 4-byte marker.
type Marker []byte

func (m Marker) Reserved() uint16 { return binary.BigEndian.Uint16(m) }

// FPDUPtr returns the back pointer with its two low bits cleared, as the
// receiver must read it.
func (m Marker) FPDUPtr() uint16 { return binary.BigEndian.Uint16(m[2:]) &^ 3 }

// Encode writes a marker pointing back fpduptr octets.
func (m Marker) Encode(fpduptr uint16) {
	binary.BigEndian.PutUint16(m, 0)
	binary.BigEndian.PutUint16(m[2:], fpduptr&^3)
}

// atMarker reports whether a marker belongs at stream offset off. The
// stream offset is a TCP sequence-space distance mod 2^32; 2^32 is a
// multiple of 512, so the test survives wrap-around.
func atMarker(off uint32) bool { return off%MarkerInterval == 0 }

// toMarker is the number of octets from off to the next marker position
// after it (512 when off is itself a marker position).
func toMarker(off uint32) int { return MarkerInterval - int(off%MarkerInterval) }

// MarkedLen returns how many octets of the stream n octets of FPDU (n as
// FPDULen counts them) take when the FPDU starts at stream offset off and
// markers are in use.
func MarkedLen(off uint32, n int) int {
	wire := 0
	for n > 0 {
		if atMarker(off) {
			off += MarkerLen
			wire += MarkerLen
		}
		k := min(n, toMarker(off))
		off += uint32(k)
		wire += k
		n -= k
	}
	return wire
}
