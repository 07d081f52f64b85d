package ladder

import (
	"bytes"
	"encoding/json"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/rnic/rnic/cmd/internal/browsertest"
)

// placement is what the page's #measure hook reports: the visible part
// of the diagram's pane, the horizontal extent of every lifeline and
// arrow, and by how many pixels the page and the legend overflow sideways.
type placement struct {
	Left, Right    float64
	Lanes, Arrows  [][2]float64
	PageOverflow   float64
	LegendOverflow float64
}

// TestLadderFitsScreens opens two-party ladders (a lossy simulated run and
// Linux rxe's atomics) in headless Chromium at laptop and desktop widths,
// and measures in the page where the lifelines and arrows lie against the
// visible pane: from 1280 px wide every lifeline and every arrow (head
// included) is in view without scrolling sideways; at 1024 px at least both
// lifelines are; the legend wraps instead of overflowing.
func TestLadderFitsScreens(t *testing.T) {
	bin := browsertest.Find(t)
	for _, src := range []struct {
		name, file string
		o          Options
	}{
		{"sim-loss", "testdata/sim-loss.pcap", Options{Gap: time.Millisecond, Title: "rnic sim: loss"}},
		{"rxe-atomic", "../../../testdata/captures/rxe-atomic-cmpswap.pcap", Options{Title: "rxe atomics"}},
	} {
		evs, err := Load(src.file, src.o)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := WriteHTML(&b, evs, src.o); err != nil {
			t.Fatal(err)
		}
		page := filepath.Join(t.TempDir(), src.name+".html")
		if err := os.WriteFile(page, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, w := range []int{1024, 1280, 1400, 1920} {
			p := measurePage(t, bin, page, w)
			what := src.name + " at " + strconv.Itoa(w) + " px"
			if len(p.Lanes) < 2 {
				t.Fatalf("%s: %d lifelines, want at least 2", what, len(p.Lanes))
			}
			if p.PageOverflow > 0 {
				t.Errorf("%s: the page scrolls sideways by %.0f px", what, p.PageOverflow)
			}
			if p.LegendOverflow > 0 {
				t.Errorf("%s: the legend overflows by %.0f px", what, p.LegendOverflow)
			}
			inView(t, what+": lifeline", p.Lanes, p)
			if w >= 1280 {
				inView(t, what+": arrow", p.Arrows, p)
			}
		}
	}
}

// inView fails for every extent that is not inside the visible pane.
func inView(t *testing.T, what string, xs [][2]float64, p placement) {
	t.Helper()
	bad := 0
	for _, x := range xs {
		if x[0] < p.Left-0.5 || x[1] > p.Right+0.5 {
			if bad++; bad <= 3 {
				t.Errorf("%s at x %.0f..%.0f, outside the visible pane %.0f..%.0f", what, x[0], x[1], p.Left, p.Right)
			}
		}
	}
	if bad > 3 {
		t.Errorf("%s: %d in all outside the pane", what, bad)
	}
}

var measured = regexp.MustCompile(`<pre id="measure">([^<]*)</pre>`)

// measurePage loads the page at the given window width and returns what
// its #measure hook wrote.
func measurePage(t *testing.T, bin, page string, width int) placement {
	t.Helper()
	dom, _ := browsertest.Run(t, bin, "--window-size="+strconv.Itoa(width)+",900", "--virtual-time-budget=2000",
		"--dump-dom", "file://"+page+"#measure")
	m := measured.FindSubmatch(dom)
	if m == nil {
		t.Fatalf("%s at %d px: the page wrote no measurement", page, width)
	}
	var p placement
	if err := json.Unmarshal([]byte(html.UnescapeString(string(m[1]))), &p); err != nil {
		t.Fatalf("measurement %s: %v", m[1], err)
	}
	if len(p.Arrows) == 0 {
		t.Fatalf("%s at %d px: no arrows measured", page, width)
	}
	return p
}
