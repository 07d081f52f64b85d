package conform

import (
	"sync"
	"testing"
)

// TestIWARPSuiteSelf runs every iWARP case against rnic itself, each on a
// DUT of its own so that they run side by side: each must pass, and each
// must FAIL with its Break applied, so no case passes vacuously.
func TestIWARPSuiteSelf(t *testing.T) {
	cases := Cases(IWARP, "")
	if len(cases) < 30 {
		t.Errorf("%d iWARP cases, want at least 30", len(cases))
	}
	type outcome struct {
		plain, broken Result
		err           error
	}
	out := make([]outcome, len(cases))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 12)
	for i, c := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			d, err := StartSelfIWARP(SelfOptions{})
			if err != nil {
				out[i].err = err
				return
			}
			defer d.Close()
			cfg, err := d.Config()
			if err != nil {
				out[i].err = err
				return
			}
			out[i] = outcome{plain: RunCase(cfg, c, false), broken: RunCase(cfg, c, true)}
		}()
	}
	wg.Wait()
	for i, c := range cases {
		o := out[i]
		t.Run(c.ID, func(t *testing.T) {
			if o.err != nil {
				t.Fatal(o.err)
			}
			if o.plain.Verdict != Pass {
				t.Errorf("plain: %s: %s [%s]", o.plain.Verdict, o.plain.Detail, o.plain.Evidence)
			}
			if o.broken.Verdict != Fail {
				t.Errorf("broken (%s): %s, want FAIL [%s]", c.Break.Name, o.broken.Verdict, o.broken.Evidence)
			}
			t.Logf("plain: %s", o.plain.Evidence)
			t.Logf("broken (%s): %s", c.Break.Name, o.broken.Detail)
		})
	}
}
