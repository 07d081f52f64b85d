// Package verbs is the vocabulary of rnic's verbs: the words the verbs
// API (nic/ibv), every backend (the nic object model, the rnicd client,
// passthrough) and the transport engines (roce, iwarp) share. It holds
// work requests, work completions, status and opcode codes, QP states and
// attributes, device, port and SRQ attributes, the error sentinels every
// backend wraps, and the small interfaces an engine uses to reach a QP's
// receive queue and completion queues.
//
// Numeric values follow libibverbs (<infiniband/verbs.h>) so that traces,
// logs and a future libibverbs provider speak the same numbers as rdma-core.
// The package holds no logic beyond names; the rules live in nic and in the
// engines.
package verbs
