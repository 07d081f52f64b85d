// Package dropin holds rnic's drop-in C libraries and, in this package's
// tests, the harness that proves them: an unprivileged rnicd with two
// NICs, and unmodified Debian programs (ibverbs-utils, perftest,
// rdmacm-utils, UCX, libfabric, Open MPI, qperf) and our own corner tests
// run on them through rnic exec.
//
// The C tree is laid out as rdma-core's:
//
//	libibverbs/  libibverbs.so.1 (its Makefile, sources, symbol map, fuzz/)
//	librdmacm/   librdmacm.so.1, linked to that libibverbs
//	include/     what both share: the generated protocol header
//	             rnicd_proto.h (go generate ./nic/rnicd/proto), the body
//	             codec rn_codec.h, the common Makefile fragment
//	tests/       C programs the Go tests build and run: the corner tests,
//	             tests/cm (rdma_cm), tests/mpi, tests/golden (the golden
//	             bodies of nic/rnicd/proto/testdata/golden, decoded in C)
//	bench/       setup.c, QP setup cost
//	soak/        soak, the verifying RC soak (make soak; TestSoak)
//
// make lib builds both into lib/; make lib-asan and make lib-clang build
// them with AddressSanitizer and with clang. The libraries' licence is in
// COPYING beside this file.
//
// The package has no Go API; its tests are its content.
package dropin
