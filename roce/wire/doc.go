// Package wire holds the RoCEv2 wire format: the InfiniBand transport headers
// (IBTA Vol 1 ch. 9) carried in UDP port 4791 (Annex A17), the opcode table,
// 24-bit PSN arithmetic, the ICRC, and the Ethernet/IP/UDP encapsulation.
//
// Headers are views over frame bytes in the style of gVisor's header package:
// a view is a byte slice with accessors, so decoding allocates nothing and
// every read is bounds-checked by the view's length, which the decoder has
// already validated. The package does no I/O and starts no goroutines.
//
// The decode path returns Error codes (a uint8 type implementing error, so
// returning one allocates nothing); the caller counts and drops.
package wire
