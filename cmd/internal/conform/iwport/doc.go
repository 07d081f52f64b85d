// Package iwport is the conformance tester's raw iWARP side: one TCP
// connection to or from the device under test (DUT) — the host's TCP, or
// a simstream.Network in the simulated mode — on which the tester
// speaks MPA, DDP and RDMAP by hand (RFC 5044, 5041, 5040, 6581, 7306)
// instead of through an engine, so that a case can send what a correct
// peer never would and see exactly what the DUT answers.
//
// # The port
//
// A Port is one connection: Dial (the DUT listens, through its rdma_cm)
// or Listener.Accept (the DUT connects). On it the tester
//
//   - sends an MPA Request or Reply built from wire.MPAFields, or any raw
//     octets (a bad key, a PD_Length above 512);
//   - reads the DUT's MPA frame (RecvMPA) with every field accessible;
//   - after the exchange, sets the framing each direction uses (CRC,
//     markers: SetFraming) and sends crafted FPDUs (SendSegment:
//     any DDP/RDMAP header, with or without a correct CRC);
//   - receives the DUT's FPDUs (Recv), deframed and decoded: a Frame
//     gives the CRC as sent and whether it matched, the DDP and RDMAP
//     fields, the Terminate fields, and the decode error if the DUT sent
//     something malformed;
//   - sees the stream end (Closed: EOF or reset, and when).
//
// Every octet both ways is recorded in the run's pcap (a TCP conversation
// tshark dissects as iWARP), and every send and receive reports the frame
// number of its data segment there, for the evidence line of a case.
//
// # Breaks
//
// Fault wraps the stream.Network of an in-process rnic iWARP NIC so that
// the NIC misbehaves on purpose: it sees the NIC's stream cut into MPA
// frames and FPDUs, each way, and may rewrite or drop any of them (the
// CRC is recomputed after a rewrite when it was right before). The
// conformance suite uses it to show that each case FAILs against a NIC
// that breaks the rule the case checks.
package iwport
