// Package ibvtest is the conformance suite of the ibv interfaces: verbs
// tests, end to end between two devices, that every backend must pass (the
// in-process NIC, rnicd's client, libibverbs on Linux rxe and siw). A
// backend's test opens its pair of devices and hands them over:
//
//	func TestConformance(t *testing.T) {
//		ibvtest.Run(t, func(t *testing.T) ibvtest.Pair {
//			a, b := open(t), open(t) // closed in t.Cleanup
//			return ibvtest.Pair{A: a, B: b, AddrA: addrA, AddrB: addrB}
//		})
//	}
//
// Run brings RC and UD QPs to RTS with Modify, as ibv_rc_pingpong does,
// which only RoCE devices allow; RunCM connects through rdma_cm
// (ibv.ConnManager) and suits RoCE and iWARP alike.
//
// The tests assert what the IBTA verbs and libibverbs promise, never what
// only rnic does: no counters, QPNs or key formats. Sizes come from what the
// devices report (Query, QueryPort), and a subtest whose capability a
// device lacks (atomics, SRQ, inline data, several SGEs) is skipped with the
// reason. Memory comes from Device.AllocBuffer only, and every byte that
// moves is checked.
package ibvtest
