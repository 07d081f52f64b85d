//go:build verbs

package passthrough

import (
	"testing"

	"github.com/rnic/rnic/nic/ibv/ibvtest"
)

// pair opens the test device twice (two ibv_contexts, as two processes
// would have) for a loopback pair.
func pair(t *testing.T) ibvtest.Pair {
	a, b := openDevice(t), openDevice(t)
	addr := deviceAddr(t, a)
	return ibvtest.Pair{A: a, B: b, AddrA: addr, AddrB: addr, IWARP: a.iwarp}
}

// TestConformance runs the ibv conformance suite's manually connected
// tests on the device (RoCE: rxe in the lab).
func TestConformance(t *testing.T) {
	skipIWARP(t, openDevice(t))
	ibvtest.Run(t, pair)
}

// TestConformanceCM runs the suite's rdma_cm tests (RoCE and iWARP).
func TestConformanceCM(t *testing.T) {
	openDevice(t)
	ibvtest.RunCM(t, pair)
}
