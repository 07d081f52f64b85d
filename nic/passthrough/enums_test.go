//go:build verbs

package passthrough

import "testing"

// TestEnumsMatchLibibverbs: every number nic/verbs shares with
// libibverbs is libibverbs' own, so the conversions here are copies.
func TestEnumsMatchLibibverbs(t *testing.T) {
	pairs := enumPairs()
	if len(pairs) < 100 {
		t.Fatalf("only %d constants compared", len(pairs))
	}
	for _, p := range pairs {
		if p.rnic != p.libibverbs {
			t.Errorf("%s: rnic has %d, libibverbs %d", p.name, p.rnic, p.libibverbs)
		}
	}
}
