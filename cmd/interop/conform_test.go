package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rnic/rnic/cmd/internal/conform"
	"github.com/rnic/rnic/cmd/internal/conform/agentproto"
)

// TestBlameKernel: a case during which the guest kernel BUGs is
// DUT-crashed with the kernel's log, its own verdict kept beside it, and
// the run fails; the report lists the crash apart from the case's rule.
func TestBlameKernel(t *testing.T) {
	rep := &conform.Report{DUT: agentproto.DeviceInfo{Name: "siw0", Kind: "siw", Transport: "iwarp"}}
	rep.Results = []conform.Result{{ID: "RFC6581-9.2/no-rtr", Section: "RFC 6581 §9.2", Title: "t", Transport: conform.IWARP,
		Verdict: conform.Fail, Detail: "step 3: the DUT accepted", Evidence: "#6← MPA Reply"}}
	rep.Recount()
	line := "[  61.2] kernel BUG at drivers/infiniband/core/iwcm.c:969!"
	blameKernel(rep, line, []string{line, "[  61.3] Call Trace:"})
	r := rep.Results[0]
	if r.Verdict != conform.DUTCrashed || r.Crash == nil || r.Crash.Verdict != conform.Fail || r.Crash.Detail != "step 3: the DUT accepted" ||
		len(r.Crash.Log) != 2 || rep.Summary.Crashed != 1 || rep.Summary.Fail != 0 || rep.ExitCode() != conform.ExitFail {
		t.Fatalf("after the crash: %+v, crash %+v, summary %+v", r, r.Crash, rep.Summary)
	}

	// The report of the run, as make conform-lab writes it.
	out, dir := t.TempDir(), t.TempDir()
	writeReports(rep, filepath.Join(out, "conform-siw"))
	outs := []conformOutcome{{Target: conformTargets[1], Report: rep}}
	if err := publishConform(dir, out, outs); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"DUT crash: kernel BUG at drivers/infiniband/core/iwcm.c:969!", "[  61.3] Call Trace:",
		"DUT-crashed (the case itself: FAIL)", "make conform-lab CONFORM_FLAGS=\"--only '=RFC6581-9.2/no-rtr'\""} {
		if !strings.Contains(string(md), want) {
			t.Errorf("the report lacks %q:\n%s", want, md)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "conform-siw.json")); err != nil {
		t.Errorf("the run's JSON is not kept beside its report: %v", err)
	}
}
