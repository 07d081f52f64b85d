package publish

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rnic/rnic/cmd/internal/conform"
)

// TestMarkdown writes the fixture's report and reads the Markdown back:
// the DUT line, the groups in order (the crash, the finding with the
// three rules it touched and their own verdicts, each FAIL, the known
// deviation), the evidence bytes, the kernel log, the command that runs
// a case again, the cases that could not run; every table row as wide
// as its header; every ladder it refers to written beside it, drawn from
// the frames of that case.
func TestMarkdown(t *testing.T) {
	run, err := LoadRun(fixtureJSON, fixturePcap)
	if err != nil {
		t.Fatal(err)
	}
	var drawn []string
	o := Options{Ladder: func(capture string, from, to int, title string) ([]byte, error) {
		drawn = append(drawn, fmt.Sprintf("%s %d-%d %s", filepath.Base(capture), from, to, title))
		return []byte(`<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"/>`), nil
	}}
	dir := t.TempDir()
	if err := Write(dir, []Run{run}, o); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, MarkdownFile))
	if err != nil {
		t.Fatal(err)
	}
	md := string(b)
	inOrder(t, md,
		"# rnic conform: deviation report",
		"## rnic0 (rnic, iWARP)", "run 2026-12-06 12:00 UTC",
		"| 8 | 3 | 2 | 1 | 0 | 1 | 1 |",
		"### 1. DUT crash: kernel BUG at drivers/test/crash.c:1!",
		"[   42.000003] Call Trace:",
		"| `RFC6581-9.2/rtr-write` |", "DUT-crashed (the case itself: pass)",
		"### 2. root cause: terminate-control-bitfield",
		"**Breaks** RFC 5040 §4.8: the Terminate Control is Layer, EType",
		"control 11 00 03 00",
		"| `RFC5041-7.2/tagged-stag` |", "| pass |",
		"| `RFC5040-4.1/rdmap-version` |",
		"| `RFC5040-4.8/term-control` |", "| FAIL |",
		"rnic conform run --agent 127.0.0.1:7471 --udp 127.0.0.3 --transport iwarp --only '=RFC5041-7.2/tagged-stag' --pcap case.pcap",
		"### 3. FAIL: RFC5040-4.8/term-control",
		"### 4. FAIL: RFC5040-4.8/term-rcvd",
		"### 5. deviation-known: cmd/internal/conform/README.md: a deviation known of this kind",
		"### Could not run", "| `test/setup-fails` | setup: cm\\_connect: connection refused |")
	if strings.Contains(md, "term-header") {
		t.Error("a case that passed with nothing found is listed")
	}
	checkTables(t, md)
	for _, want := range []string{"selfrun.pcap 81-90 RFC6581-9.2/rtr-write", "selfrun.pcap 1-14 RFC5041-7.2/tagged-stag", "selfrun.pcap 57-66 RFC5040-4.8/term-rcvd"} {
		if !strings.Contains(strings.Join(drawn, "\n"), want) {
			t.Errorf("no ladder drawn of %s; drawn:\n%s", want, strings.Join(drawn, "\n"))
		}
	}
	for _, l := range strings.Split(md, "\n") {
		if i := strings.Index(l, "]("); strings.HasPrefix(l, "![") && i > 0 {
			name := strings.TrimSuffix(l[i+2:], ")")
			if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
				t.Errorf("the Markdown shows %s, which is not beside it: %v", name, err)
			}
		}
	}
}

// inOrder wants each string in s, each after the one before.
func inOrder(t *testing.T, s string, wants ...string) {
	t.Helper()
	at := 0
	for _, w := range wants {
		i := strings.Index(s[at:], w)
		if i < 0 {
			t.Errorf("no %q after offset %d of:\n%s", w, at, s)
			return
		}
		at += i + len(w)
	}
}

// checkTables wants every row of a Markdown table to have its header's
// number of cells (an escaped | is no border).
func checkTables(t *testing.T, md string) {
	t.Helper()
	cells := func(l string) int { return strings.Count(strings.ReplaceAll(l, `\|`, ""), "|") }
	want := 0
	for i, l := range strings.Split(md, "\n") {
		if !strings.HasPrefix(l, "|") {
			want = 0
			continue
		}
		if want == 0 {
			want = cells(l)
			continue
		}
		if n := cells(l); n != want {
			t.Errorf("line %d has %d borders, its table %d: %s", i+1, n, want, l)
		}
	}
}

// TestGroups: a FAIL with a finding shows under both; a crash groups by
// its kernel line without the timestamp, so two cases that hit the same
// BUG are one cause.
func TestGroups(t *testing.T) {
	f := conform.Finding{Cause: "c", Section: "§1", Rule: "r", Evidence: "e"}
	rep := &conform.Report{Results: []conform.Result{
		{ID: "a", Verdict: conform.Fail, Findings: []conform.Finding{f}},
		{ID: "b", Verdict: conform.Pass, Findings: []conform.Finding{f}},
		{ID: "c", Verdict: conform.Pass},
		{ID: "d", Verdict: conform.Pass},
	}}
	rep.Results[2].MarkCrashed("[   1.5] kernel BUG at x.c:9!", nil)
	rep.Results[3].MarkCrashed("[ 200.25] kernel BUG at x.c:9!", nil)
	var got []string
	for _, g := range Groups(rep) {
		var ids []string
		for _, r := range g.Results {
			ids = append(ids, r.ID)
		}
		got = append(got, fmt.Sprintf("%s %s %v", g.Kind, g.Name, ids))
	}
	want := []string{"DUT crash kernel BUG at x.c:9! [c d]", "root cause c [a b]", "FAIL a [a]"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("groups:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
