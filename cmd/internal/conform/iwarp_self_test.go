package conform

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/rnic/rnic/transport/pcap"
)

// TestIWARPSuiteSelf runs every iWARP case against rnic itself, over the
// host's TCP and over the simulated network, each on a DUT of its own so
// that they run side by side: each must pass, and each must FAIL with its
// Break applied, so no case passes vacuously.
func TestIWARPSuiteSelf(t *testing.T) {
	cases := Cases(IWARP, "")
	if len(cases) < 30 {
		t.Errorf("%d iWARP cases, want at least 30", len(cases))
	}
	for _, mode := range []struct {
		name string
		sim  bool
	}{{"embedded", false}, {"sim", true}} {
		out := runIWARPSelf(cases, mode.sim)
		for i, c := range cases {
			o := out[i]
			t.Run(mode.name+"/"+c.ID, func(t *testing.T) {
				if o.err != nil {
					t.Fatal(o.err)
				}
				if o.plain.Verdict != Pass {
					t.Errorf("plain: %s: %s [%s]", o.plain.Verdict, o.plain.Detail, o.plain.Evidence)
				}
				if o.broken.Verdict != Fail {
					t.Errorf("broken (%s): %s, want FAIL [%s]", c.Break.Name, o.broken.Verdict, o.broken.Evidence)
				}
				// The fault must fail a step of the case, not its setup.
				if strings.HasPrefix(o.broken.Detail, "setup:") {
					t.Errorf("broken (%s) failed in the setup: %s", c.Break.Name, o.broken.Detail)
				}
				t.Logf("plain: %s", o.plain.Evidence)
				t.Logf("broken (%s): %s", c.Break.Name, o.broken.Detail)
			})
		}
	}
}

type iwOutcome struct {
	plain, broken Result
	err           error
}

// runIWARPSelf runs each case plain and broken on a DUT of its own, a
// few at a time.
func runIWARPSelf(cases []Case, sim bool) []iwOutcome {
	out := make([]iwOutcome, len(cases))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i, c := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			d, err := StartSelfIWARP(SelfOptions{Sim: sim})
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
			out[i] = iwOutcome{plain: RunCase(cfg, c, false), broken: RunCase(cfg, c, true)}
		}()
	}
	wg.Wait()
	return out
}

// TestIWARPEvidenceFrames: the frame numbers an iWARP case's evidence
// cites are the frames of the capture that carry what it says.
func TestIWARPEvidenceFrames(t *testing.T) {
	var buf bytes.Buffer
	pw, err := pcap.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	d, err := StartSelfIWARP(SelfOptions{Pcap: pw})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	cfg, err := d.Config()
	if err != nil {
		t.Fatal(err)
	}
	cases := Cases(IWARP, "RFC5041-7.2/tagged-stag")
	if len(cases) != 1 {
		t.Fatalf("%d cases", len(cases))
	}
	res := RunCase(cfg, cases[0], false)
	if res.Verdict != Pass {
		t.Fatalf("%s: %s", res.Verdict, res.Detail)
	}
	pw.Flush()
	frames, err := pcap.ReadFrom(&buf)
	if err != nil {
		t.Fatal(err)
	}
	// "#n→ RDMA Write …": a tagged Write (DDP control T|L|DV=1, RDMAP
	// RV=1 opcode 0); "#m← Terminate …": untagged (L|DV=1), RV=1 opcode 7,
	// QN 2, MSN 1.
	want := map[string][]byte{"→ RDMA Write": {0xC1, 0x40}, "← Terminate": {0x41, 0x47}}
	for what, hdr := range want {
		var n int
		i := strings.Index(res.Evidence, what)
		if i < 0 {
			t.Fatalf("no %q in %q", what, res.Evidence)
		}
		j := strings.LastIndex(res.Evidence[:i], "#")
		if _, err := fmt.Sscanf(res.Evidence[j:i], "#%d", &n); err != nil || n < 1 || n > len(frames) {
			t.Fatalf("%q: frame %q of %d", what, res.Evidence[j:i], len(frames))
		}
		if !bytes.Contains(frames[n-1].Data, hdr) {
			t.Errorf("frame %d (%s) does not hold % x: % x", n, what, hdr, frames[n-1].Data)
		}
	}
	t.Log(res.Evidence)
}
