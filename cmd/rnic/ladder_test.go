package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rnic/rnic/transport"
)

// TestLadderCLI draws a capture through the command line, SVG and HTML,
// and checks the usage errors.
func TestLadderCLI(t *testing.T) {
	dir := t.TempDir()
	capture := "../../testdata/captures/siw-rping-mpacrc.pcap"
	for _, out := range []string{"a.svg", "a.html"} {
		var o, e bytes.Buffer
		p := filepath.Join(dir, out)
		if st := run([]string{"ladder", "--by-qp", "--from", "1", "--to", "2s", capture, "-o", p}, &o, &e); st != 0 {
			t.Fatalf("rnic ladder -o %s: status %d: %s", out, st, e.String())
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte("MPA Request")) || !bytes.Contains(b, []byte("<svg")) {
			t.Errorf("%s: no MPA Request or no svg", out)
		}
	}
	for _, args := range [][]string{
		{"ladder", capture}, // no -o
		{"ladder", capture, "-o", filepath.Join(dir, "x.png")}, // unknown format
		{"ladder", "-o", filepath.Join(dir, "x.svg")},          // no capture
		{"ladder", capture, "-o", filepath.Join(dir, "x.svg"), "--qp", "zz"},
		{"ladder", capture, "-o", filepath.Join(dir, "x.svg"), "--from", "soon"},
		{"ladder", "/nonexistent.pcap", "-o", filepath.Join(dir, "x.svg")},
	} {
		var o, e bytes.Buffer
		if st := run(args, &o, &e); st != 2 || !strings.HasPrefix(e.String(), "rnic ladder: ") {
			t.Errorf("%q: status %d, stderr %q; want 2 and a message", args, st, e.String())
		}
	}
}

// TestSimLadder runs the simulator with faults and --ladder: the link's
// lost frames end in a cross, every frame the link corrupted is drawn with
// a bad ICRC (or as undecodable) — the link's truth and the decode agree —
// and the retry timer that the losses cause is marked.
func TestSimLadder(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sim.svg")
	var o, e bytes.Buffer
	args := []string{"sim", "--ops", "10", "--qps", "1", "--max-msg", "5000", "--loss", "0.06", "--dup", "0.04",
		"--corrupt", "0.03", "--seed", "10", "--ladder", p}
	if st := run(args, &o, &e); st != 0 {
		t.Fatalf("rnic sim --ladder: status %d: %s %s", st, o.String(), e.String())
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if n := strings.Count(s, `<g class="lost">`); n == 0 {
		t.Error("no frame drawn as lost")
	}
	if !strings.Contains(s, "[link: duplicated]") {
		t.Error("no frame drawn as a link duplicate")
	}
	if !strings.Contains(s, `<g class="mark"`) || !strings.Contains(s, "local ACK timeout") {
		t.Error("no timer expiry marked")
	}
	frame := regexp.MustCompile(`(?s)<g class="frame (\w+)"[^>]*>(.*?)</g>\n`)
	corrupted := 0
	for _, m := range frame.FindAllStringSubmatch(s, -1) {
		if !strings.Contains(m[2], "link: corrupted") {
			continue
		}
		corrupted++
		if !strings.Contains(m[2], `class="badcrc"`) && m[1] != "unknown" {
			t.Errorf("a frame the link corrupted is drawn without a bad ICRC: %.200s", m[2])
		}
	}
	if corrupted == 0 {
		t.Error("no frame drawn as corrupted by the link")
	}
	if st := run([]string{"sim", "--ladder", "x.pdf"}, &o, &e); st != 2 {
		t.Errorf("sim --ladder x.pdf: status %d, want 2", st)
	}
}

// dropFirst is a link that loses the first frame sent through it.
type dropFirst struct {
	transport.Endpoint
	dropped atomic.Bool
}

func (d *dropFirst) Send(frame []byte) error {
	if d.dropped.CompareAndSwap(false, true) {
		return nil
	}
	return d.Endpoint.Send(frame)
}

// TestDemoLadderMarks runs `rnic demo --ladder` with rnic0's first frame
// (step 1's SEND) lost below its capture: the local ACK timeout that
// rnic0's engine reports is marked, in the row right before the resent
// SEND, after the lost one, and every captured frame still has exactly one
// arrow.
func TestDemoLadderMarks(t *testing.T) {
	demoFault = func(ep transport.Endpoint) transport.Endpoint { return &dropFirst{Endpoint: ep} }
	defer func() { demoFault = nil }()
	dir := t.TempDir()
	pcap, svg := filepath.Join(dir, "demo.pcap"), filepath.Join(dir, "demo.svg")
	var o, e bytes.Buffer
	if st := run([]string{"demo", "--addr-a", "127.0.0.58", "--addr-b", "127.0.0.59", "--pcap", pcap, "--ladder", svg}, &o, &e); st != 0 {
		t.Fatalf("rnic demo --ladder: status %d: %s %s", st, o.String(), e.String())
	}
	m := regexp.MustCompile(`\(([0-9]+) frames\)`).FindStringSubmatch(o.String())
	if m == nil {
		t.Fatalf("no frame count in the demo's output:\n%s", o.String())
	}
	frames, _ := strconv.Atoi(m[1])
	b, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	// The rows in order: marks, and frames with their numbers.
	row := regexp.MustCompile(`(?s)<g class="mark"[^>]*><title>([^<]*)</title>|<g class="frame \w+" id="f([0-9]+)"[^>]*>(.*?)</g>\n`)
	seen := map[int]int{}
	markAt, timeouts := -1, 0
	var rows [][]string
	for _, r := range row.FindAllStringSubmatch(string(b), -1) {
		rows = append(rows, r)
		if r[2] != "" {
			n, _ := strconv.Atoi(r[2])
			seen[n]++
			continue
		}
		if strings.Contains(r[1], "local ACK timeout") {
			timeouts++
			if markAt < 0 {
				markAt = len(rows) - 1
			}
		}
	}
	for i := 1; i <= frames; i++ {
		if seen[i] != 1 {
			t.Errorf("frame %d has %d arrows, want 1", i, seen[i])
		}
	}
	if len(seen) != frames {
		t.Errorf("arrows for %d frames, the capture has %d", len(seen), frames)
	}
	// A busy host may delay an ACK past the timeout too: more marks are
	// allowed, the first is the lost SEND's.
	if timeouts == 0 || markAt < 1 || markAt+1 >= len(rows) {
		t.Fatalf("%d local ACK timeout marks (want at least 1), the first at row %d of %d", timeouts, markAt, len(rows))
	}
	lost, resent := rows[markAt-1], rows[markAt+1]
	if lost[2] != "1" || !strings.Contains(lost[3], "SEND Only") || strings.Contains(lost[3], `stroke-dasharray="7 4"`) {
		t.Errorf("the row before the mark is not the lost SEND (frame 1, not a retransmission): %.300s", lost[0])
	}
	if !strings.Contains(resent[3], "SEND Only") || !strings.Contains(resent[3], `stroke-dasharray="7 4"`) {
		t.Errorf("the row after the mark is not the resent SEND (dashed): %.300s", resent[0])
	}
	if !strings.Contains(rows[markAt][1], "rnic0 qp=") {
		t.Errorf("the mark does not name rnic0's QP: %s", rows[markAt][1])
	}
}

// TestDemoLadderDevice: with -d the frames are the device's own and there
// is no capture, so --ladder is a usage error, not a drawing of whatever
// demo.pcap an earlier run left.
func TestDemoLadderDevice(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "d.svg")
	var o, e bytes.Buffer
	if st := run([]string{"demo", "-d", "rnic9", "--addr-a", "127.0.0.63", "--ladder", svg}, &o, &e); st != 2 || !strings.Contains(e.String(), "--ladder: not with -d") {
		t.Errorf("demo -d --ladder: status %d, stderr %q; want 2 and --ladder: not with -d", st, e.String())
	}
	if _, err := os.Stat(svg); err == nil {
		t.Error("demo -d --ladder drew a diagram")
	}
}
