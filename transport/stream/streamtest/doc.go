// Package streamtest holds what the tests of the stream implementations
// (kerneltcp, netstack, simstream, streamcap) share: a writer that drives
// a stream.Conn as the iWARP engine does (Feeder, with backpressure), a
// receiver that records what arrived and when (Sink), and the checks run
// on them, and the kernel's cut of a TCP super-segment (CutSuperSegment).
// It is for tests only, and a package of its own because the
// tests of several packages share it.
package streamtest
