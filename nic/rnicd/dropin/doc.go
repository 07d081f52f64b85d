// Package dropin holds rnic's drop-in libibverbs.so.1 (the C sources in
// ibverbs/, built by make lib into lib/) and, in this package's tests, the
// harness that proves it: an unprivileged rnicd with two NICs, and the
// unmodified Debian programs (ibverbs-utils, perftest) and our own corner
// tests (tests/corners.c, under AddressSanitizer) run on it through
// rnic exec.
//
// The package has no Go API; its tests are its content.
package dropin
