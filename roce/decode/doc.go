// Package decode turns capture files into one readable line (or JSON
// object) per RoCEv2 frame and a summary, for `rnic decode`. It keeps the
// command thin and makes the output testable: Run drives whole files,
// DecodeFrame and the Append* functions handle one frame.
//
// Frames are classified by their UDP destination port (4791 unless
// configured): a frame to that port that roce/wire decodes is a RoCEv2 frame
// and gets a line with its ICRC verdict; one that does not decode is
// "unknown" and gets a line saying why; every other frame (ARP, TCP, other
// UDP, ...) is only counted. A frame whose only link to 4791 is its source
// port is not RoCEv2 (Annex A17.4 identifies RoCEv2 by destination port).
//
// The other frames also go to iwarp/decode, which reassembles the TCP
// connections and shows the MPA frames and FPDUs of those that speak MPA
// (and "unknown" lines for what in them does not decode); Run prints its
// records among the RoCEv2 lines, in frame order, and the summary counts
// them (iwarp, crc_bad, unknown).
//
// Nothing here trusts the bytes: any input gives a line or a count, never a
// panic (FuzzFrame).
package decode
