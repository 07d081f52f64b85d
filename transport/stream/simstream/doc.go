// Package simstream is iWARP's byte streams simulated on a virtual clock:
// the simulated mode. NewPair makes one connection between two ends;
// Network is a stream.Network whose Dial plays the TCP handshake, with
// refusals, lost SYNs and timeouts, so the connection manager's paths run
// deterministically. Every delivery is an event on the clock, and every
// random choice (how bytes are split and coalesced, a scripted corruption
// or reset) comes from a seed: the same seed gives the same run.
//
// It is apart from package stream, which holds only the contract, so that
// the engine links no implementation, and apart from the kernel and
// netstack streams, whose goroutines and sockets it has none of.
package simstream
