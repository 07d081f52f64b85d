// Package verbs is the vocabulary shared by the nic object model and the
// transport engines (roce, iwarp): work requests, work completions, status
// and opcode codes, QP states and attributes, and the small interfaces an
// engine uses to reach a QP's receive queue and completion queues.
//
// Numeric values follow libibverbs (<infiniband/verbs.h>) so that traces,
// logs and a future libibverbs provider speak the same numbers as rdma-core.
// The package holds no logic beyond names; the rules live in nic and in the
// engines.
package verbs
