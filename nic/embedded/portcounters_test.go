package embedded

import (
	"testing"

	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/roce"
)

// TestPortCounterNames: the counters nic's QueryPort reports as
// bad_pkey_cntr and qkey_viol_cntr are the RoCE engine's, by name.
func TestPortCounterNames(t *testing.T) {
	if roce.BadPKey.String() != nic.BadPKeyCounter || roce.QKeyViolation.String() != nic.QKeyViolationCounter {
		t.Fatalf("engine counters %q and %q, nic reads %q and %q",
			roce.BadPKey, roce.QKeyViolation, nic.BadPKeyCounter, nic.QKeyViolationCounter)
	}
}
