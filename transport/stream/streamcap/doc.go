// Package streamcap records a stream connection as a TCP capture that
// Wireshark dissects: TeeConn wraps a stream.Conn and writes, into a
// pcap.Writer, the Ethernet/IP/TCP frames of the conversation it had
// (handshake, segments, ACKs, FIN or RST), which neither a kernel socket
// nor the simulated stream shows.
//
// It is apart from package stream, which holds only the contract, because
// it builds frames with gopacket and writes pcap files: the engine must not
// link either.
package streamcap
