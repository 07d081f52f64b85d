// Package pcap writes and reads the capture files of rnic's frames:
// Writer appends Ethernet frames to a classic pcap file (nanosecond
// timestamps) that Wireshark opens, Reader reads what Wireshark or tcpdump
// wrote (pcap or pcapng, gzipped or not), and Tee wraps a
// transport.Endpoint so that a NIC's port records what it sends and
// receives.
//
// It is apart from package transport because it is built on gopacket's
// pcapgo: the engines import transport for its interfaces and must not link
// a packet library they never call. Programs, tests and the NIC assembly
// (nic/embedded, nic/tapnic) import this package to capture.
package pcap
