package conform

import (
	"strings"
	"testing"
)

// startSelf starts an in-process DUT for a test.
func startSelfTest(t *testing.T, opt SelfOptions) (*SelfDUT, *Config) {
	t.Helper()
	d, err := StartSelf(opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	cfg, err := d.Config()
	if err != nil {
		t.Fatal(err)
	}
	return d, cfg
}

// TestSuiteSelf runs every RoCEv2 case against rnic itself: each must
// pass, and each must FAIL with its Break applied, so no case passes
// vacuously.
func TestSuiteSelf(t *testing.T) {
	t.Run("embedded", func(t *testing.T) { t.Parallel(); suiteSelf(t, SelfOptions{}) })
	t.Run("simulated", func(t *testing.T) { t.Parallel(); suiteSelf(t, SelfOptions{Sim: true}) })
}

func suiteSelf(t *testing.T, opt SelfOptions) {
	_, cfg := startSelfTest(t, opt)
	for _, c := range Cases(RoCE, "") {
		t.Run(c.ID, func(t *testing.T) {
			res := RunCase(cfg, c, false)
			if res.Verdict != Pass {
				t.Fatalf("plain: %s: %s [%s]", res.Verdict, res.Detail, res.Evidence)
			}
			t.Logf("plain: %s", res.Evidence)
			// A broken DUT only has to fail: shorter waits.
			fast := *cfg
			fast.Slow = 0.25
			broken := RunCase(&fast, c, true)
			if broken.Verdict != Fail {
				t.Fatalf("broken (%s): %s, want FAIL [%s]", c.Break.Name, broken.Verdict, broken.Evidence)
			}
			// The fault must fail a step of the case, not its setup.
			if strings.HasPrefix(broken.Detail, "setup:") {
				t.Fatalf("broken (%s) failed in the setup: %s", c.Break.Name, broken.Detail)
			}
			t.Logf("broken (%s): %s", c.Break.Name, broken.Detail)
		})
	}
}
