// Package decode finds the iWARP traffic in a capture for `rnic decode`:
// it reassembles every TCP connection's two byte streams from the frames,
// recognises the MPA connections among them, and decodes their MPA frames
// and FPDUs (MPA, DDP, RDMAP, with iwarp/wire) into Records, one line of
// output each (AppendText, AppendJSON). roce/decode drives it next to the
// RoCEv2 decoder and counts the records in its summary.
//
// # Recognising MPA
//
// As Wireshark's MPA heuristic does (transport/tsharktest/README.md,
// "MPA"), only a connection whose start was captured can be decoded: the
// SYN (or the SYN-ACK, which acknowledges it) gives each direction's
// initial sequence number, and a connection is MPA when one direction's
// first payload octets are an MPA Request ("MPA ID Req Frame") or Reply. Once the Request
// and the Reply have both been seen, wire.Negotiate gives each direction's
// framing (CRC-32C in both when either side set C; markers toward a side
// that set M) and both directions are deframed from the octet after their
// MPA frame. Octets a direction sends after its frame and before the other
// direction's frame are held (up to 64 KiB) and decoded once it arrives.
//
// Not iWARP, and neither shown nor counted beyond the frame count:
//   - a TCP connection whose first payload octets in each direction are not
//     an MPA frame (ssh, perftest's TCP exchange, ...);
//   - a connection whose SYN and SYN-ACK were both not captured (the
//     capture started after the handshake): its payload cannot be placed
//     in its stream, so it counts neither as iwarp nor as unknown, exactly
//     as Wireshark cannot decode it.
//
// # Records
//
// One per MPA Request or Reply (KindMPA), one per FPDU (KindFPDU), and one
// per problem (KindUnknown). A record is stamped with the frame whose
// arrival completed it: for an FPDU, the frame carrying its last octet in
// stream order (a frame that fills a hole completes everything held after
// it), which is where Wireshark shows a reassembled PDU; for a problem
// found when a stream ends (FIN, RST, the end of the capture), the last
// frame that carried octets of that direction. FPDUs held until the
// other direction's MPA frame are stamped with the frame that completed
// the negotiation.
//
// # What counts
//
// roce/decode's summary counts iwarp = KindFPDU records (FPDUs whose ULPDU
// decodes as DDP/RDMAP), crc_bad = FPDUs whose CRC was negotiated and does
// not verify (Record.BadCRC: whether or not the ULPDU decodes), and adds
// the KindUnknown records to unknown. A KindUnknown record is one of:
//
//   - an FPDU whose ULPDU does not decode (its wire.Error counter name:
//     ddp_version_tagged, rdmap_bad_opcode, ddp_bad_qn, truncated,
//     bad_length, ...): one per such FPDU;
//   - a break in a direction's stream: octets missing from the capture
//     (tcp_gap, with how many), framing lost (fpdu_too_long,
//     mpa_bad_marker), or the stream ending inside an FPDU
//     (incomplete_fpdu) or inside its MPA frame (incomplete_mpa): one per
//     break;
//   - an MPA setup failure, one per direction: the direction that should
//     begin with the Reply (or Request) begins with something else
//     (mpa_bad_key, or mpa_not_reply for a second frame of the same kind;
//     also tcp_gap when its first octets are missing), a malformed frame
//     (mpa_private_data_too_long, mpa_enhanced_too_short), payload after
//     a Reply with R set (mpa_rejected), or payload after the direction's
//     frame when the other frame never came (mpa_not_negotiated).
//
// After a break the direction is resynchronised: the decoder looks for an
// FPDU whose ULPDU decodes (and whose CRC verifies, when CRCs are on)
// starting where a TCP segment starts (siw, like most senders, starts each
// segment with an FPDU) or, after an undecodable FPDU, right after it,
// and resumes there. Nothing between the break and that point is counted
// again, whatever it holds (more holes included): a break counts once.
// An undecodable FPDU whose CRC verifies leaves the framing trusted (the
// CRC covers the length field) and decoding goes on with the next FPDU;
// with markers negotiated the markers vouch for the framing instead, but
// the deframer cannot restart mid-stream, so a gap or a framing error ends
// that direction (siw never negotiates markers).
//
// # TCP reassembly
//
// Per connection (4-tuple) and direction, segments are placed by sequence
// number relative to the initial one (wrapping correctly): octets already
// delivered are ignored (retransmissions, duplicates, overlaps: the first
// copy wins), octets ahead of a hole are held until it is filled, and a
// hole is reported as a gap once the other direction acknowledges octets
// beyond it (the receiver had them: only the capture missed them, and no
// retransmission will come), at the end of the stream, or when too much is
// held. Octets the capture's snap length cut off, and TCP
// segments in IP fragments (not reassembled), are holes too. Nothing
// beyond a FIN is taken; an RST ends the connection. TCP checksums are not
// checked (a sender's own capture has them offloaded). A new SYN on a
// finished or different connection's 4-tuple starts a new connection.
//
// # Bounds
//
// Nothing here trusts the bytes: any input gives records or nothing, never
// a panic (FuzzDecoder). Memory is bounded: at most 4096 connections are
// tracked at once (one more ends the oldest non-MPA one, else the oldest,
// as the end of the capture would); out-of-order octets are held up to 1 MiB per
// direction and 32 MiB in all, beyond which the earliest hole is given up
// as a gap; a segment more than 16 MiB ahead of its stream is ignored; a
// direction holds at most 4096 out-of-order segments, its MPA frame (532
// octets), 64 KiB before negotiation, one FPDU (64 KiB, the deframer's
// buffer) or, while resynchronising, one FPDU plus one segment.
// Directions that are not MPA hold nothing. The output does not depend on
// map order: the end of the capture reports connections in the order they
// began.
package decode
