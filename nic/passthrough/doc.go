// Package passthrough drives real RDMA devices (or Linux rxe and siw)
// through libibverbs and librdmacm, behind the same ibv interfaces as rnic's
// own NIC, so a program runs unchanged on hardware by opening "verbs:NAME"
// (verbs:mlx5_0, verbs:rxe0) in place of an rnic device:
//
//	import _ "github.com/rnic/rnic/nic/passthrough" // registers verbs:
//	dev, err := ibv.Open(spec) // spec from ibv.ParseSpec("verbs:rxe0")
//
// The backend needs cgo and rdma-core's headers, so it sits behind the
// build tag verbs (go build -tags verbs, with libibverbs-dev and
// librdmacm-dev installed). Without the tag the package is pure Go and
// registers an opener that fails with ErrNotBuilt, so "verbs:" device
// strings always give a clear answer.
//
// What the device offers: every ibv.Device verb; ibv.ConnManager through
// librdmacm with QPs the program created itself (the user-managed QP mode
// of rdma_cm, so iWARP devices, which connect only through a CM, work
// too); ibv.Network, which is the host kernel's TCP/IP stack (where the
// device's addresses live); ibv.Counters, the port's hw_counters as
// rdma statistic shows them; ibv.McastQP; and, where max_mw is not 0
// (rxe; siw has none), memory windows: ibv.MWAllocator and ibv.MWBinder,
// with BIND_MW and LOCAL_INV work requests in PostSend.
//
// The cgo boundary is thin and batched: data-path calls of libibverbs are
// static inline functions, reached through small C wrappers (shim.c) that
// post a chain of up to 16 work requests or poll up to 16 completions per
// call, building the libibverbs structs in C memory. Completion events
// (one completion channel per device), asynchronous events and rdma_cm
// events are read by goroutines parked in Go's poller on non-blocking
// descriptors, never by threads blocked in C.
//
// Memory: Device.AllocBuffer returns anonymous mmap'd memory outside the
// Go heap, which is what every backend accepts. RegMR also takes Go memory:
// the MR pins it (runtime.Pinner) until Dereg, which the cgo rules require
// because the kernel keeps the address.
//
// Addressing is by GID, as on RoCE: an AddressVector becomes a global
// ibv_ah_attr (is_global = 1). InfiniBand's LID routing has no place in
// verbs.AddressVector, so an IB-link-layer port is reachable only where a
// GRH route exists; the DMAC and UDP source port of an AddressVector are
// the kernel's to choose and are ignored. A UD SendWR names its
// destination by the *AddressVector its AH returned (AH.AV), not a copy.
//
// Where devices fall short of the verbs, the backend says what it does:
//
//   - iWARP has no GIDs on the wire (siw reports one MAC-derived entry),
//     so an iWARP device's GID table is its Ethernet device's IP
//     addresses, as in rnic's own iWARP NIC, and GIDIndex works alike.
//   - siw on Linux 6.1 does not report a QP's state (ibv_query_qp leaves
//     it zero, RESET); since no device moves a QP back to RESET by itself,
//     a QP that reads RESET after rnic moved it elsewhere reports the
//     state rnic (or rdma_cm) moved it to.
//   - MaxInlineData, which libibverbs does not report, is found at open by
//     creating QPs with decreasing inline sizes.
//   - rxe (rdma-core 44, Linux 6.1) marks a receive that invalidated an
//     rkey with the kernel's flag bit, libibverbs' IBV_WC_IP_CSUM_OK; on
//     rxe the backend reports it as verbs.WCFlagWithInv.
//   - CMListen listens on IPv4 (0.0.0.0): siw's listeners take IPv4 and
//     IPv6 wildcards differently, and the lab is IPv4.
//
// Tests: go test -tags verbs runs them on the first libibverbs device
// ($RNIC_PT_DEVICE, $RNIC_PT_ADDR override); on a host without one, every
// device test skips and says so (make test-verbs). The lab's guests stand
// in for hardware: make interop's passthrough rows, or lab-test.sh, run
// the test binaries (plain and -race) in an rxe and a siw guest, including
// the ibvtest conformance suite.
package passthrough
