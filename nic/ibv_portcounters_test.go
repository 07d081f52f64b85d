package nic_test

import (
	"testing"

	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/ibv"
)

// TestQueryPortCounters: AsIBV's QueryPort reports the engine's bad_pkey
// and qkey_violation counters as bad_pkey_cntr and qkey_viol_cntr, which
// stop at 0xFFFF (16-bit IBTA counters, as rxe's), and 0 without a
// counter source.
func TestQueryPortCounters(t *testing.T) {
	dev, err := nic.Open(nic.Config{Name: "rnic9"})
	if err != nil {
		t.Fatal(err)
	}
	var bad, viol uint64
	d := nic.AsIBV(dev, nic.IBVOptions{Counters: func() []ibv.Counter {
		return []ibv.Counter{{Name: "sent_pkts", Value: 5}, {Name: nic.BadPKeyCounter, Value: bad},
			{Name: nic.QKeyViolationCounter, Value: viol}}
	}})
	defer d.Close()
	for _, c := range []struct {
		bad, viol    uint64
		wantB, wantV uint32
	}{{0, 0, 0, 0}, {3, 7, 3, 7}, {0x10000, 0xFFFF, 0xFFFF, 0xFFFF}, {1 << 40, 0x1FFFF, 0xFFFF, 0xFFFF}} {
		bad, viol = c.bad, c.viol
		a, err := d.QueryPort(1)
		if err != nil {
			t.Fatal(err)
		}
		if a.BadPKeyCntr != c.wantB || a.QKeyViolCntr != c.wantV {
			t.Errorf("counters %d, %d: bad_pkey_cntr %d, qkey_viol_cntr %d; want %d, %d", c.bad, c.viol,
				a.BadPKeyCntr, a.QKeyViolCntr, c.wantB, c.wantV)
		}
	}
	if _, err := d.QueryPort(2); err == nil {
		t.Error("QueryPort(2) succeeded")
	}
}
