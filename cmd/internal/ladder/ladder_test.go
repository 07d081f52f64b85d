package ladder

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rnic/rnic/roce/decode"
	"github.com/rnic/rnic/transport"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// arrow is what the test reads back from one frame's group in the SVG.
type arrow struct {
	frame              int
	class              string
	label, sub         string
	dashed, dotted     bool
	badCRC, fpdu, lost bool
	hidden             bool // a member of a collapsed band
}

type parsed struct {
	arrows []arrow
	bands  []string // rnic:frames of each band
	gaps   []string // rnic:gap of each break
}

// parseSVG checks that b is well-formed XML with an svg root in the SVG
// namespace, version 1.1, and reads back every frame group.
func parseSVG(t *testing.T, b []byte) parsed {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	d.Strict = true
	var p parsed
	var cur *arrow
	depth, curDepth := 0, 0
	var textClass string
	var text strings.Builder
	root := true
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			depth++
			if root {
				root = false
				if el.Name.Space != "http://www.w3.org/2000/svg" || el.Name.Local != "svg" || attr(el, "", "version") != "1.1" {
					t.Fatalf("root element %v version %q, want SVG 1.1", el.Name, attr(el, "", "version"))
				}
			}
			if f := attr(el, NS, "frame"); f != "" {
				n, _ := strconv.Atoi(f)
				p.arrows = append(p.arrows, arrow{frame: n, class: attr(el, NS, "class"), hidden: attr(el, "", "display") == "none"})
				cur, curDepth = &p.arrows[len(p.arrows)-1], depth
			}
			if f := attr(el, NS, "frames"); f != "" {
				p.bands = append(p.bands, f)
			}
			if g := attr(el, NS, "gap"); g != "" {
				p.gaps = append(p.gaps, g)
			}
			if cur != nil {
				switch {
				case el.Name.Local == "line" && attr(el, "", "stroke-dasharray") == "7 4":
					cur.dashed = true
				case el.Name.Local == "line" && attr(el, "", "stroke-dasharray") == "2 3":
					cur.dotted = true
				case attr(el, "", "class") == "badcrc":
					cur.badCRC = true
				case attr(el, "", "class") == "fpdu":
					cur.fpdu = true
				case attr(el, "", "class") == "lost":
					cur.lost = true
				case el.Name.Local == "text":
					textClass = attr(el, "", "class")
					text.Reset()
				}
			}
		case xml.CharData:
			text.Write(el)
		case xml.EndElement:
			if cur != nil && el.Name.Local == "text" {
				switch textClass {
				case "label":
					cur.label = text.String()
				case "sub":
					cur.sub = text.String()
				}
				textClass = ""
			}
			if cur != nil && depth == curDepth {
				cur = nil
			}
			depth--
		}
	}
	return p
}

func attr(el xml.StartElement, space, local string) string {
	for _, a := range el.Attr {
		if a.Name.Space == space && a.Name.Local == local {
			return a.Value
		}
	}
	return ""
}

func render(t *testing.T, path string, o Options) ([]byte, []Event) {
	t.Helper()
	evs, err := Load(path, o)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteSVG(&b, evs, o); err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), evs
}

// countFrames counts the frames of a capture independently of Load.
func countFrames(t *testing.T, path string) int {
	t.Helper()
	r, err := decode.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := 0
	for {
		if _, _, err := r.ReadFrame(); err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			return n
		}
		n++
	}
}

// decodeLines runs rnic decode's engine on the capture and returns its
// lines by frame number.
func decodeLines(t *testing.T, path string) map[int][]string {
	t.Helper()
	var b bytes.Buffer
	if _, err := decode.Run(&b, []string{path}, decode.Options{}); err != nil {
		t.Fatal(err)
	}
	m := map[int][]string{}
	for _, l := range strings.Split(b.String(), "\n") {
		if !strings.HasPrefix(l, "#") {
			continue
		}
		n, err := strconv.Atoi(l[1:strings.IndexByte(l, ' ')])
		if err != nil {
			t.Fatal(err)
		}
		m[n] = append(m[n], l)
	}
	return m
}

var cmPrefix = regexp.MustCompile(`^CM [A-Z_]+ `)

// checkLabels checks that every word of every arrow's label and fields is
// in what rnic decode printed for that frame, and that every frame decode
// printed is labelled from it.
func checkLabels(t *testing.T, p parsed, lines map[int][]string) {
	t.Helper()
	for _, a := range p.arrows {
		ls, ok := lines[a.frame]
		if !ok {
			if !strings.HasPrefix(a.label, "TCP [") && a.class != "tcp" {
				t.Errorf("frame %d: rnic decode shows nothing, but the arrow says %q (%s)", a.frame, a.label, a.class)
			}
			continue
		}
		words := map[string]bool{}
		for _, l := range ls {
			for _, w := range strings.Fields(l) {
				words[w] = true
			}
		}
		label := cmPrefix.ReplaceAllString(a.label, "")
		label = regexp.MustCompile(` \+[0-9]+ more$`).ReplaceAllString(label, "")
		for _, w := range strings.Fields(label + " " + a.sub) {
			if !words[w] {
				t.Errorf("frame %d: %q of label %q / %q is not in its decode %q", a.frame, w, a.label, a.sub, ls)
			}
		}
	}
}

func byFrame(p parsed) map[int]arrow {
	m := map[int]arrow{}
	for _, a := range p.arrows {
		m[a.frame] = a
	}
	return m
}

// TestCaptures draws real captures (rxe and siw, from the lab) and the
// simulator's lossy run: well-formed SVG 1.1, exactly one arrow per frame
// of the capture, labels from the decode, and what each capture is known
// to contain drawn as such.
func TestCaptures(t *testing.T) {
	cases := []struct {
		file  string
		check func(t *testing.T, m map[int]arrow)
	}{
		{"../../../testdata/captures/rxe-read-lat-64.pcap", func(t *testing.T, m map[int]arrow) {
			want(t, m, "RC RDMA READ Request psn=", "reth va=0x", "request")
			want(t, m, "RC RDMA READ Response Only psn=", "aeth ACK", "response")
		}},
		{"../../../testdata/captures/rxe-send-bw-ud-1024.pcap", func(t *testing.T, m map[int]arrow) {
			want(t, m, "UD SEND Only psn=", "deth qkey=", "request")
		}},
		{"../../../testdata/captures/rxe-rping.pcap", func(t *testing.T, m map[int]arrow) {
			for _, cmMsg := range []string{"CM REQ ", "CM REP ", "CM RTU ", "CM DREQ "} {
				want(t, m, cmMsg, "deth qkey=", "setup")
			}
			want(t, m, "RC RDMA WRITE Only psn=", "reth va=0x", "request")
			want(t, m, "RC Acknowledge psn=", "aeth ACK", "ack")
		}},
		{"../../../testdata/captures/siw-rping-mpacrc.pcap", func(t *testing.T, m map[int]arrow) {
			want(t, m, "MPA Request", "flags=CS", "setup")
			want(t, m, "MPA Reply", "flags=CS", "setup")
			want(t, m, "Send", "qn=0 msn=", "request")
			want(t, m, "RDMA Read Request", "sink_stag=", "request")
			want(t, m, "RDMA Read Response", "stag=0x", "response")
			want(t, m, "TCP [SYN]", "seq=", "tcp")
			fpdus := 0
			for _, a := range m {
				if a.fpdu {
					fpdus++
					if a.class != "request" && a.class != "response" {
						t.Errorf("frame %d completes an FPDU but is drawn as %s", a.frame, a.class)
					}
				}
			}
			if fpdus == 0 {
				t.Error("no TCP segment is marked as completing an FPDU")
			}
		}},
		{"testdata/sim-loss.pcap", func(t *testing.T, m map[int]arrow) {
			want(t, m, "RC Acknowledge psn=", "aeth NAK PSN sequence error", "nak")
			var retx, dup, bad int
			for _, a := range m {
				retx += b2i(a.dashed)
				dup += b2i(a.dotted)
				bad += b2i(a.badCRC)
			}
			if retx == 0 || dup == 0 || bad != 2 {
				t.Errorf("retransmissions %d, duplicates %d, bad ICRCs %d; want some, some, 2", retx, dup, bad)
			}
		}},
	}
	for _, c := range cases {
		t.Run(filepath.Base(c.file), func(t *testing.T) {
			svg, _ := render(t, c.file, Options{})
			p := parseSVG(t, svg)
			n := countFrames(t, c.file)
			seen := map[int]int{}
			for _, a := range p.arrows {
				seen[a.frame]++
			}
			for i := 1; i <= n; i++ {
				if seen[i] != 1 {
					t.Errorf("frame %d has %d arrows, want 1", i, seen[i])
				}
			}
			if len(p.arrows) != n {
				t.Errorf("%d arrows for %d frames", len(p.arrows), n)
			}
			checkLabels(t, p, decodeLines(t, c.file))
			c.check(t, byFrame(p))
		})
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// want checks that some arrow's label starts with label, its fields
// contain sub, and it is drawn in class.
func want(t *testing.T, m map[int]arrow, label, sub, class string) {
	t.Helper()
	for _, a := range m {
		if strings.HasPrefix(a.label, label) && strings.Contains(a.sub, sub) {
			if a.class != class {
				t.Errorf("frame %d %q is drawn as %s, want %s", a.frame, a.label, a.class, class)
			}
			return
		}
	}
	t.Errorf("no arrow labelled %q with %q", label, sub)
}

// TestSimRetransmission checks the marks against what the lossy run did,
// frame by frame (see rnic decode testdata/sim-loss.pcap): a request PSN
// sent again is dashed, the second identical READ response dotted.
func TestSimRetransmission(t *testing.T) {
	svg, evs := render(t, "testdata/sim-loss.pcap", Options{Gap: time.Millisecond})
	p := parseSVG(t, svg)
	m := byFrame(p)
	first := map[string]int{} // request key -> first frame
	for _, e := range evs {
		if e.Class != ClassRequest || e.psn < 0 {
			continue
		}
		k := e.SrcHost + e.DstHost + strconv.Itoa(e.DstQP) + "/" + strconv.FormatInt(e.psn, 10)
		a := m[e.Frame]
		if f, ok := first[k]; ok {
			if !a.dashed {
				t.Errorf("frame %d resends the PSN of frame %d but is not dashed", e.Frame, f)
			}
		} else {
			first[k] = e.Frame
			if a.dashed {
				t.Errorf("frame %d is the first with its PSN but is dashed", e.Frame)
			}
		}
	}
	if len(p.gaps) == 0 {
		t.Error("no idle break drawn with a 1 ms gap threshold (the run pauses 4 ms for a retry timer)")
	}
}

// TestBands checks that runs of Middle packets become one band whose
// members are still one (hidden) arrow per frame, consecutive.
func TestBands(t *testing.T) {
	svg, _ := render(t, "testdata/sim-loss.pcap", Options{})
	p := parseSVG(t, svg)
	if len(p.bands) == 0 {
		t.Fatal("no band drawn")
	}
	m := byFrame(p)
	for _, b := range p.bands {
		lo, hi, ok := strings.Cut(b, "-")
		a, _ := strconv.Atoi(lo)
		z, _ := strconv.Atoi(hi)
		if !ok || z-a+1 < minBand {
			t.Errorf("band %q: want at least %d frames", b, minBand)
		}
		for f := a; f <= z; f++ {
			if !m[f].hidden || !strings.Contains(m[f].label, "Middle") {
				t.Errorf("band %s: frame %d is %+v, want a hidden Middle arrow", b, f, m[f])
			}
		}
	}
}

// TestSelect checks --from/--to (frames and times) and --qp.
func TestSelect(t *testing.T) {
	const file = "../../../testdata/captures/rxe-rping.pcap"
	svg, evs := render(t, file, Options{From: 10, To: 20})
	p := parseSVG(t, svg)
	if len(p.arrows) != 11 || p.arrows[0].frame != 10 || p.arrows[10].frame != 20 {
		t.Errorf("--from 10 --to 20 drew %d arrows", len(p.arrows))
	}
	var qp int
	for _, e := range evs {
		if e.Class == ClassRequest && e.DstQP > 1 {
			qp = e.DstQP
			break
		}
	}
	svg, _ = render(t, file, Options{QP: qp})
	p = parseSVG(t, svg)
	if len(p.arrows) == 0 {
		t.Fatal("--qp drew nothing")
	}
	for _, a := range p.arrows {
		var e *Event
		for i := range evs {
			if evs[i].Frame == a.frame {
				e = &evs[i]
			}
		}
		if e.SrcQP != qp && e.DstQP != qp {
			t.Errorf("--qp %#x drew frame %d (qps %d, %d)", qp, a.frame, e.SrcQP, e.DstQP)
		}
	}
	t0 := evs[5].Time
	svg, _ = render(t, file, Options{FromTime: t0, ToTime: t0})
	for _, a := range parseSVG(t, svg).arrows {
		if evs[a.frame-1].Time != t0 {
			t.Errorf("--from/--to %v drew frame %d at %v", t0, a.frame, evs[a.frame-1].Time)
		}
	}
}

// TestByQP checks that --by-qp gives each RC QP its own lane, pairing the
// source QP (not on the wire) from the ACKs.
func TestByQP(t *testing.T) {
	evs, err := Load("../../../testdata/captures/rxe-read-lat-64.pcap", Options{ByQP: true})
	if err != nil {
		t.Fatal(err)
	}
	paired := 0
	for _, e := range evs {
		if e.psn >= 0 && e.SrcQP >= 0 {
			paired++
			s, d := laneNames(&e, true)
			if !strings.Contains(s, " qp 0x") || !strings.Contains(d, " qp 0x") {
				t.Errorf("frame %d: lanes %q -> %q", e.Frame, s, d)
			}
		}
	}
	if paired == 0 {
		t.Error("no RC frame's source QP was paired")
	}
}

// TestGolden pins the bytes: the same input gives the same SVG and HTML
// (rendered twice), and they match the reviewed files in testdata/golden.
func TestGolden(t *testing.T) {
	for _, c := range []struct {
		name, file string
		o          Options
		html       bool
	}{
		{"rxe-rping-1-40.svg", "../../../testdata/captures/rxe-rping.pcap", Options{From: 1, To: 40, Title: "rxe rping: rdma_cm connect, then READ/WRITE/SEND"}, false},
		{"sim-loss.svg", "testdata/sim-loss.pcap", Options{Gap: time.Millisecond, Title: "rnic sim: loss, duplication, corruption"}, false},
		{"sim-loss.html", "testdata/sim-loss.pcap", Options{Gap: time.Millisecond, Title: "rnic sim: loss, duplication, corruption"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out [2]bytes.Buffer
			for i := range out {
				evs, err := Load(c.file, c.o)
				if err != nil {
					t.Fatal(err)
				}
				if c.html {
					err = WriteHTML(&out[i], evs, c.o)
				} else {
					err = WriteSVG(&out[i], evs, c.o)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(out[0].Bytes(), out[1].Bytes()) {
				t.Fatal("two renderings of the same capture differ")
			}
			// Self-contained: nothing is loaded from elsewhere (links to
			// the specs are followed only when clicked).
			for _, fetch := range []string{" src=", "<link", "@import", "url(http", "xlink:href=\"http", "fetch(", "XMLHttpRequest"} {
				if bytes.Contains(out[0].Bytes(), []byte(fetch)) {
					t.Errorf("%s contains %q: it would load something", c.name, fetch)
				}
			}
			path := filepath.Join("testdata/golden", c.name)
			if *update {
				os.MkdirAll("testdata/golden", 0o755)
				if err := os.WriteFile(path, out[0].Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out[0].Bytes(), want) {
				t.Errorf("%s differs from the golden file (go test -update to rewrite it after review)", c.name)
			}
		})
	}
}

// TestTruth checks the simulator's ground truth on the diagram: a frame
// the link lost ends in a cross, a link copy is dotted and says so, and an
// engine mark is drawn between the frames around its time, without a
// frame number.
func TestTruth(t *testing.T) {
	r, err := os.Open("testdata/sim-loss.pcap")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	evs, start, err := LoadReader(r, "sim", Options{})
	if err != nil {
		t.Fatal(err)
	}
	at := start.Add(evs[33].Time) // frame 34's time: after the 4 ms pause
	evs = Annotate(evs, start, Truth{
		Notes: map[int]transport.LinkNote{1: transport.NoteLost, 5: transport.NoteDuplicate | transport.NoteCorrupted},
		Marks: []Mark{{At: at.Add(-time.Nanosecond), Who: "rnic0 qp=0x000011", QP: 0x11, What: "local ACK timeout: psn 7 unacknowledged"}},
	})
	var b bytes.Buffer
	if err := WriteSVG(&b, evs, Options{}); err != nil {
		t.Fatal(err)
	}
	p := parseSVG(t, b.Bytes())
	m := byFrame(p)
	if !m[1].lost || m[2].lost {
		t.Errorf("lost marks: frame 1 %v, frame 2 %v; want true, false", m[1].lost, m[2].lost)
	}
	if !m[5].dotted || m[5].dashed || !strings.HasSuffix(m[5].label, "[link: duplicated,corrupted]") {
		t.Errorf("frame 5: dotted %v, label %q", m[5].dotted, m[5].label)
	}
	if len(p.arrows) != countFrames(t, "testdata/sim-loss.pcap") {
		t.Errorf("%d arrows: a mark must not count as a frame", len(p.arrows))
	}
	s := b.String()
	i, j, k := strings.Index(s, `id="f33"`), strings.Index(s, "local ACK timeout: psn 7"), strings.Index(s, `id="f34"`)
	if j < 0 || !(i < j && j < k) {
		t.Errorf("the mark is at %d, want between frame 33 (%d) and 34 (%d)", j, i, k)
	}
}
