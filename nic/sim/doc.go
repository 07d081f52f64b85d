// Package sim runs two rnic devices against each other over the simulated
// link and a virtual clock, under a random mixed workload and seeded faults,
// and checks every completion, byte and atomic result against a reference
// model. It is what `rnic sim` runs, and the end-to-end proof that the RC
// engine survives loss, reordering, duplication and corruption.
//
// Everything runs on one goroutine driven by the virtual clock, so a run is
// a pure function of its Config: the same seed gives the same counters, the
// same capture and the same final line.
package sim
