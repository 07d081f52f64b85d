package iwconform

import (
	"context"
	"net/netip"
	"testing"

	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/tools/conform/iwport"
	"github.com/rnic/rnic/transport/stream"
)

var dutAddr = netip.MustParseAddr("127.0.0.1")

// openDUT opens an in-process rnic iWARP NIC on loopback, broken by
// fault when it is not nil.
func openDUT(t *testing.T, fault iwport.Fault) DUT {
	t.Helper()
	cfg := embedded.IWARPConfig{Addr: dutAddr}
	if fault != nil {
		cfg.Network = iwport.Network(&stream.TCP{}, fault)
	}
	n, err := embedded.OpenIWARP(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d, err := NewLocalDUT(n.Verbs(ibv.LocalOptions{}), dutAddr, "rnic")
	if err != nil {
		n.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// TestSuite runs every case against rnic (must pass) and against rnic
// with the case's Break (must FAIL).
func TestSuite(t *testing.T) {
	cases := Cases()
	if len(cases) < 30 {
		t.Errorf("%d cases, want at least 30", len(cases))
	}
	seen := map[string]bool{}
	for i := range cases {
		c := &cases[i]
		if seen[c.ID] {
			t.Errorf("case %s twice", c.ID)
		}
		seen[c.ID] = true
		t.Run(c.ID, func(t *testing.T) {
			t.Parallel()
			r := Run(context.Background(), &Env{DUT: openDUT(t, nil)}, c)
			if r.Verdict != Pass {
				t.Errorf("plain rnic: %s: %s", r.Verdict, r.Evidence)
			}
			if c.Break == nil {
				t.Fatalf("case %s has no Break", c.ID)
			}
			b := Run(context.Background(), &Env{DUT: openDUT(t, c.Break)}, c)
			if b.Verdict != Fail {
				t.Errorf("broken rnic: %s, want FAIL: %s", b.Verdict, b.Evidence)
			}
			t.Logf("plain: %s: %s", r.Verdict, r.Evidence)
			t.Logf("broken: %s: %s", b.Verdict, b.Evidence)
		})
	}
}
