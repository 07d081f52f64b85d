// Package sim runs two rnic devices against each other over the simulated
// link and a virtual clock, under a random mixed workload and seeded faults,
// and checks every completion, byte and atomic result against a reference
// model. It is what `rnic sim` runs, and the end-to-end proof that the RC
// engine survives loss, reordering, duplication and corruption.
//
// Everything runs on one goroutine driven by the virtual clock, and every
// random choice comes from the seed: the workload, the link's faults, and
// the devices' QPNs (hence UDP source ports), keys and key indices
// (nic.Config.Seed), with buffers registered at fixed virtual addresses. So
// a run is a pure function of its Config: the same seed gives the same
// counters, trace, final line and capture, byte for byte, whatever the
// machine's load. (Outside the simulation QPNs and keys stay unpredictable.)
package sim
