package main

import (
	"bytes"
	"encoding/json"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rnic/rnic/cmd/internal/browsertest"
)

// The report fixture: a run of iWARP cases against rnic itself with one
// group of every kind (cmd/internal/conform/publish's TestFixture).
const (
	reportFixtureJSON = "../internal/conform/publish/testdata/selfrun.json"
	reportFixturePcap = "../internal/conform/publish/testdata/selfrun.pcap"
)

// TestConformReportBrowser writes the fixture's report with rnic conform
// report and opens the HTML in headless Chromium at laptop and desktop
// widths: no console message (no script error), the page does not scroll
// sideways, every group is there with its ladder (drawn by rnic ladder's
// code from the capture's frames) and no ladder is wider than the page.
func TestConformReportBrowser(t *testing.T) {
	bin := browsertest.Find(t)
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	if rc := runConformReport([]string{"-o", dir, "--pcap", reportFixturePcap, reportFixtureJSON}, &stdout, &stderr); rc != 0 {
		t.Fatalf("rnic conform report: %d: %s", rc, stderr.String())
	}
	page := filepath.Join(dir, "report.html")
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "<svg"); n != 5 {
		t.Errorf("the page inlines %d ladders, want one per group (5)", n)
	}
	for _, w := range []int{1024, 1280, 1920} {
		out, errb := browsertest.Run(t, bin, "--enable-logging=stderr", "--v=0", "--window-size="+strconv.Itoa(w)+",900",
			"--virtual-time-budget=2000", "--dump-dom", "file://"+page+"#measure")
		dom, logs := string(out), string(errb)
		if c := consoleLines(logs); len(c) > 0 {
			t.Errorf("at %d px the console says:\n%s", w, strings.Join(c, "\n"))
		}
		m := regexp.MustCompile(`<pre id="measure">([^<]*)</pre>`).FindStringSubmatch(dom)
		if m == nil {
			t.Fatalf("at %d px the page wrote no measurement", w)
		}
		var p struct{ Overflow, Ladders, Wide, Articles int }
		if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &p); err != nil {
			t.Fatal(err)
		}
		if p.Overflow > 0 || p.Wide > 0 || p.Ladders != 5 || p.Articles != 5 {
			t.Errorf("at %d px: %+v, want no sideways overflow, 5 groups each with a ladder in view", w, p)
		}
	}
}

// consoleLines are the page's console messages among Chromium's log.
func consoleLines(logs string) []string {
	var out []string
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, ":CONSOLE") {
			out = append(out, l)
		}
	}
	return out
}
