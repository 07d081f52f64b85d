package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
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
