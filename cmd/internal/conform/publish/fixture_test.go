package publish

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/rnic/rnic/cmd/internal/conform"
	"github.com/rnic/rnic/transport/pcap"
)

// fixtureDate is the fixture run's date, fixed so that -update changes
// only what the run changed.
var fixtureDate = time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)

var update = flag.Bool("update", false, "write testdata/selfrun.{json,pcap} again")

// Fixture files: a run of iWARP cases against rnic itself, made to show
// every kind of group a report has (see selfRun).
const (
	fixtureJSON = "testdata/selfrun.json"
	fixturePcap = "testdata/selfrun.pcap"
)

// selfRun runs cases against the in-process iWARP DUT into a capture at
// pcapPath, so that the report holds each kind of group: a finding (the
// DUT lays its Terminate Control out as siw does: two cases pass their
// own rules beside it, term-control FAILs), a FAIL of a case's own rule
// (a Break), a known deviation (a Break the case is told to expect of
// this kind), a case could not run (its setup fails), and a DUT crash
// (marked as the lab harness marks one, with a made-up kernel log).
func selfRun(t *testing.T, pcapPath string) *conform.Report {
	t.Helper()
	f, err := os.Create(pcapPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pw, err := pcap.NewWriter(f)
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Flush()
	d, err := conform.StartSelfIWARP(conform.SelfOptions{Pcap: pw})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	cfg, err := d.Config()
	if err != nil {
		t.Fatal(err)
	}
	rep := &conform.Report{DUT: cfg.Info, Date: fixtureDate}
	one := func(id string) conform.Case {
		cs := conform.Cases(conform.IWARP, "="+id)
		if len(cs) != 1 {
			t.Fatalf("%s: %d cases", id, len(cs))
		}
		return cs[0]
	}
	run := func(c conform.Case, broken bool) conform.Result {
		r := conform.RunCase(cfg, c, broken)
		rep.Results = append(rep.Results, r)
		return r
	}
	for _, id := range []string{"RFC5041-7.2/tagged-stag", "RFC5040-4.1/rdmap-version", "RFC5040-4.8/term-control"} {
		c := one(id)
		c.Break = conform.TerminateAsLE()
		run(c, true)
	}
	run(one("RFC5040-4.8/term-header"), false)
	run(one("RFC5040-4.8/term-rcvd"), true)
	known := one("RFC5040-4.8/term-seglen")
	known.Deviations = []conform.Deviation{{Kind: cfg.Info.Kind, Ref: "cmd/internal/conform/README.md: a deviation known of this kind"}}
	run(known, true)
	run(conform.Case{ID: "test/setup-fails", Section: "none", Title: "a case whose setup the DUT refuses", Transport: conform.IWARP,
		Setup: conform.Setup{Custom: func(*conform.Run) error { return errors.New("cm_connect: connection refused") }}}, false)
	crashed := run(one("RFC6581-9.2/rtr-write"), false)
	crashed.MarkCrashed("[   42.000001] kernel BUG at drivers/test/crash.c:1!", []string{
		"[   42.000001] kernel BUG at drivers/test/crash.c:1!", "[   42.000002] invalid opcode: 0000 [#1] SMP", "[   42.000003] Call Trace:"})
	rep.Results[len(rep.Results)-1] = crashed
	rep.Recount()
	return rep
}

// TestFixture runs selfRun afresh and checks that the committed fixture
// has the same cases with the same verdicts and findings (-update writes
// it again).
func TestFixture(t *testing.T) {
	dir := t.TempDir()
	pcapPath := filepath.Join(dir, "selfrun.pcap")
	if *update {
		pcapPath = fixturePcap
	}
	rep := selfRun(t, pcapPath)
	if *update {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(fixtureJSON, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run, err := LoadRun(fixtureJSON, fixturePcap)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := shape(run.Report), shape(rep); !slices.Equal(got, want) {
		t.Errorf("the fixture's cases and verdicts:\n%q\na run now:\n%q\n(go test -run TestFixture -update)", got, want)
	}
}

// shape is what a fixture must keep: each case, its verdict and causes.
func shape(rep *conform.Report) []string {
	var out []string
	for _, r := range rep.Results {
		s := r.ID + " " + string(r.Verdict)
		for _, f := range r.Findings {
			s += " " + f.Cause
		}
		out = append(out, s)
	}
	return out
}
