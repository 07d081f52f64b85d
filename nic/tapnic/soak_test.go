package tapnic_test

import (
	"testing"

	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/ibv/ibvtest"
	"github.com/rnic/rnic/tap/taptest"
)

// TestSoakTAP: QPs by the thousand between two TAP-mode NICs leave nothing
// behind (the TAP mode's part of the soak).
func TestSoakTAP(t *testing.T) {
	tn := taptest.New(t, 67)
	a := openNIC(t, tn, "rnica", nil, tn.Addr4(2))
	b := openNIC(t, tn, "rnicb", nil, tn.Addr4(3))
	p := ibvtest.Pair{A: a.Verbs(nic.IBVOptions{}), B: b.Verbs(nic.IBVOptions{}),
		AddrA: tn.Addr4(2).Addr(), AddrB: tn.Addr4(3).Addr()}
	ibvtest.Soak(t, p, ibvtest.SoakQPs)
}
