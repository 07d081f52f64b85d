// The ibv conformance suite (nic/ibv/ibvtest) on clients of a daemon:
// two clients of one NIC (loopback, as hardware does) and clients of two
// NICs of one daemon.

package client_test

import (
	"testing"

	"github.com/rnic/rnic/nic/ibv/ibvtest"
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
)

func TestConformance(t *testing.T) {
	t.Run("one NIC", func(t *testing.T) {
		d := rnicdtest.Start(t, rnicdtest.Options{MTU: 9000})
		ibvtest.Run(t, func(t *testing.T) ibvtest.Pair {
			return ibvtest.Pair{A: open(t, d, 0), B: open(t, d, 0), AddrA: d.NICs[0].Addr, AddrB: d.NICs[0].Addr}
		})
	})
	t.Run("two NICs", func(t *testing.T) {
		d := rnicdtest.Start(t, rnicdtest.Options{NICs: 2})
		ibvtest.Run(t, func(t *testing.T) ibvtest.Pair {
			return ibvtest.Pair{A: open(t, d, 0), B: open(t, d, 1), AddrA: d.NICs[0].Addr, AddrB: d.NICs[1].Addr}
		})
	})
}
