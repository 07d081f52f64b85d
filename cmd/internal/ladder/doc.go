// Package ladder draws ladder (sequence) diagrams of RDMA conversations:
// one vertical lane per endpoint, one arrow per frame in time order,
// labelled with what a reader of the protocol needs (opcode, PSN, the key
// fields of each extension header, DDP STag/TO or QN/MSN/MO, MPA and IB CM
// messages). It renders SVG 1.1 and a self-contained HTML page.
//
// It is a program on top of the decoders: frames are decoded by
// roce/decode (RoCEv2) and iwarp/decode (MPA/DDP/RDMAP over reassembled
// TCP); this package only classifies and draws what they report.
//
// What the marks mean (the legend in every diagram says the same):
//
//   - colour is the role of the frame: request (blue), response (green),
//     ACK (grey), NAK (red, labelled with its code), RNR NAK (orange),
//     connection setup: IB CM MADs and MPA Request/Reply (purple), other
//     TCP segments (light grey), undecodable frames (black);
//   - a dashed line is a retransmission: a request whose PSN was already
//     sent to that QP;
//   - a dotted line is a duplicate: an ACK or response whose PSN, opcode and
//     syndrome were already sent to that QP, or (simulator) the link's copy
//     of a frame;
//   - a red ring with a cross on the arrow is a bad ICRC or MPA CRC;
//   - a small square at the tail is a TCP segment that completed an FPDU;
//   - an arrow ending in a cross is a frame the simulated link lost, and
//     "[link: ...]" names what else the link did to a frame (duplicated,
//     corrupted, delayed);
//   - an hourglass row is an engine event from the simulator's trace: a
//     local ACK timeout, an RNR NAK sent or waited on.
//
// Rows are in frame order, one per frame; a pause longer than the gap
// threshold is drawn as a break marked with its length. Runs of Middle
// packets of one message are collapsed into one labelled band.
package ladder
