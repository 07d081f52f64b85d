// iWARP through the daemon: an iWARP NIC served by rnicd tells its clients
// its transport, and its rdma_cm (MPA) connects their QPs.

package client_test

import (
	"testing"

	"github.com/rnic/rnic/nic/ibv/ibvtest"
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
	"github.com/rnic/rnic/nic/verbs"
)

func TestIWARPThroughDaemon(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{NICs: 2, IWARP: true})
	t.Run("transport", func(t *testing.T) {
		a := open(t, d, 0).Query()
		if a.Transport != verbs.TransportIWARP || a.NodeType != verbs.NodeRNIC {
			t.Fatalf("client's device: transport %v, node type %v; want iWARP, RNIC", a.Transport, a.NodeType)
		}
	})
	t.Run("one NIC", func(t *testing.T) {
		ibvtest.RunCM(t, func(t *testing.T) ibvtest.Pair {
			return ibvtest.Pair{A: open(t, d, 0), B: open(t, d, 0), AddrA: d.Addr(0), AddrB: d.Addr(0), IWARP: true}
		})
	})
	t.Run("two NICs", func(t *testing.T) {
		ibvtest.RunCM(t, func(t *testing.T) ibvtest.Pair {
			return ibvtest.Pair{A: open(t, d, 0), B: open(t, d, 1), AddrA: d.Addr(0), AddrB: d.Addr(1), IWARP: true}
		})
	})
}

// A RoCEv2 NIC served by rnicd is a CA on IB transport to its clients.
func TestRoCETransportThroughDaemon(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{})
	if a := open(t, d, 0).Query(); a.Transport != verbs.TransportIB || a.NodeType != verbs.NodeCA {
		t.Fatalf("client's device: transport %v, node type %v; want InfiniBand, CA", a.Transport, a.NodeType)
	}
}
