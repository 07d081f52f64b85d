package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rnic/rnic/tap/taptest"
)

// TestLabTAPRefusals: --tap is the RoCEv2 scenarios' only: with --iwarp it
// is a usage error, and an iWARP scenario says it has no TAP form.
func TestLabTAPRefusals(t *testing.T) {
	var out, errb bytes.Buffer
	if code := runLab([]string{"run", "rc-basics", "--iwarp", "--tap"}, &out, &errb); code != 2 {
		t.Errorf("--iwarp --tap: exit %d, want 2 (%s)", code, errb.String())
	}
	errb.Reset()
	if code := runLab([]string{"run", "mpa", "--tap"}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "no TAP form") {
		t.Errorf("mpa --tap: exit %d, %q; want 1 and no TAP form", code, errb.String())
	}
}

// TestLabRunTAP runs one scenario's TAP form as a user does (root): the
// narration with the ICRC drop and the resend, a capture and a ladder.
func TestLabRunTAP(t *testing.T) {
	taptest.Require(t)
	dir := t.TempDir()
	pcapPath, svgPath := filepath.Join(dir, "icrc.pcapng"), filepath.Join(dir, "icrc.svg")
	var out, errb bytes.Buffer
	if code := runLab([]string{"run", "icrc", "--tap", "--pcap", pcapPath, "--ladder", svgPath}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"RECV SUCCESS bytes=512", "icrc_err=1", "retransmit_timeouts=1"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	capture, err := os.ReadFile(pcapPath)
	if err != nil || !bytes.Contains(capture, []byte("rnic: corrupted")) {
		t.Errorf("the capture has no note on the corrupted frame (%v)", err)
	}
	if svg, err := os.ReadFile(svgPath); err != nil || !bytes.Contains(svg, []byte("10.0.0.2")) {
		t.Errorf("the ladder has no lifeline for rnic1 (%v)", err)
	}
}
