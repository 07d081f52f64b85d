// Package mad encodes and decodes the InfiniBand communication manager's
// management datagrams as they run over RoCEv2 (IBTA Vol 1 §13.4.3 MAD
// header, §12.6 CM messages, §12.11 SIDR, and rdma_cm's CMA header in the
// REQ's private data). It holds no state and does not import the engine,
// so a tester can craft and parse MADs without building a NIC; package cm
// runs the state machine on top of it. Parsing does not allocate; errors
// keep the "cm:" prefix they had when these codecs lived in cm.
package mad
