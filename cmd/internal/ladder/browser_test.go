package ladder

import (
	"bytes"
	"fmt"
	"html"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rnic/rnic/cmd/internal/browsertest"
)

// TestBrowser opens the HTML page of the simulator's lossy run in a real
// browser: a screenshot of the right size that is not blank and shows the
// arrows' colours, and through the DOM, a click on an arrow (one plain,
// one inside a collapsed band) shows that frame's decode.
func TestBrowser(t *testing.T) {
	bin := browsertest.Find(t)
	o := Options{Gap: time.Millisecond, Title: "rnic sim: loss, duplication, corruption"}
	evs, err := Load("testdata/sim-loss.pcap", o)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, evs, o); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(t.TempDir(), "sim-loss.html")
	if err := os.WriteFile(page, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	url := "file://" + page

	shot := filepath.Join(t.TempDir(), "shot.png")
	browsertest.Run(t, bin, "--window-size=1200,900", "--screenshot="+shot, url)
	checkScreenshot(t, shot, 1200, 900)

	plain, member := pickFrames(t, evs)
	for _, e := range []*Event{plain, member} {
		out, _ := browsertest.Run(t, bin, "--virtual-time-budget=2000", "--dump-dom", url+"#click="+strconv.Itoa(e.Frame))
		dom := string(out)
		n := strconv.Itoa(e.Frame)
		if !strings.Contains(dom, `<div id="detail" data-frame="`+n+`">`) {
			t.Errorf("click on frame %s: the detail panel does not show it", n)
		}
		first, _, _ := strings.Cut(e.Decode, "\n")
		if !strings.Contains(dom, `<pre id="decode">`+html.EscapeString(first)) {
			t.Errorf("click on frame %s: the decode %q is not shown", n, first)
		}
		if !strings.Contains(dom, `<td>psn</td>`) {
			t.Errorf("click on frame %s: no field table", n)
		}
		if e == member && !strings.Contains(dom, `data-open="1"`) {
			t.Errorf("click on frame %s, in a band: the band did not expand", n)
		}
	}
	checkQPFilter(t, bin)
}

// checkQPFilter sets the QP filter of the rxe rping page (CM MADs on QP 1,
// then an RC QP pair) to the RC pair's QP, through the select element, and
// checks that exactly the frames of other QPs are dimmed.
func checkQPFilter(t *testing.T, bin string) {
	t.Helper()
	evs, err := Load("../../../testdata/captures/rxe-rping.pcap", Options{})
	if err != nil {
		t.Fatal(err)
	}
	var qp string
	for i := range evs {
		if evs[i].Class == ClassRequest && evs[i].DstQP > 1 {
			qp = fmt.Sprintf("0x%06x", evs[i].DstQP)
			break
		}
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, evs, Options{}); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(t.TempDir(), "rping.html")
	if err := os.WriteFile(page, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	url := "file://" + page
	out, _ := browsertest.Run(t, bin, "--virtual-time-budget=2000", "--dump-dom", url+"#qp="+qp)
	dom := string(out)
	tag := regexp.MustCompile(`<g class="frame ([a-z ]+)" id="f[0-9]+" data-frame="[0-9]+" data-class="[a-z]+" data-qps="([0-9a-fx ]*)"`)
	dim, kept := 0, 0
	for _, m := range tag.FindAllStringSubmatch(dom, -1) {
		own := strings.Contains(" "+m[2]+" ", " "+qp+" ")
		isDim := strings.Contains(m[1], "dim")
		if own == isDim {
			t.Errorf("QP filter %s: frame with qps %q dimmed=%v", qp, m[2], isDim)
		}
		dim += b2i(isDim)
		kept += b2i(!isDim)
	}
	if dim == 0 || kept == 0 {
		t.Errorf("QP filter %s: %d frames dimmed, %d kept; want some of each", qp, dim, kept)
	}
}

// pickFrames returns a RoCE frame drawn as its own arrow and one inside a
// collapsed band.
func pickFrames(t *testing.T, evs []Event) (plain, member *Event) {
	rows := layout(evs, time.Millisecond)
	for _, r := range rows {
		switch {
		case r.kind == rowArrow && plain == nil && r.events[0].psn >= 0:
			plain = r.events[0]
		case r.kind == rowBand && member == nil:
			member = r.events[1]
		}
	}
	if plain == nil || member == nil {
		t.Fatal("the capture has no plain arrow or no band")
	}
	return plain, member
}

// checkScreenshot checks the PNG's size, that it is not blank (enough
// non-white pixels) and that the request colour appears.
func checkScreenshot(t *testing.T, path string, w, h int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != w || b.Dy() != h {
		t.Fatalf("screenshot is %dx%d, want %dx%d", b.Dx(), b.Dy(), w, h)
	}
	ink, blue := 0, 0
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			r, g, b = r>>8, g>>8, b>>8
			if r < 200 || g < 200 || b < 200 {
				ink++
			}
			if b > 150 && r < 80 && g < 130 { // #1f5fbf, the requests
				blue++
			}
		}
	}
	if ink < w*h/100 || blue < 50 {
		t.Errorf("screenshot looks blank: %d dark pixels, %d request-blue", ink, blue)
	}
}
