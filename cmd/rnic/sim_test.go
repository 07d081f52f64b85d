package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// TestSimIWARP runs `rnic sim --iwarp`: it passes, ends with the sim line,
// repeats itself for a seed, and refuses frame faults.
func TestSimIWARP(t *testing.T) {
	args := []string{"sim", "--iwarp", "--ops", "600", "--seed", "5", "--max-msg", "6000"}
	var out1, out2, errOut bytes.Buffer
	if code := run(args, &out1, &errOut); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out1.String(), errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out1.String()), "\n")
	last := lines[len(lines)-1]
	if !regexp.MustCompile(`^sim: ops=600 ok=600 failed=0 bytes=\d+ mismatched_bytes=0 virtual_time=\S+$`).MatchString(last) {
		t.Fatalf("last line %q\n%s", last, out1.String())
	}
	if code := run(args, &out2, &errOut); code != 0 || out2.String() != out1.String() {
		t.Fatalf("second run (exit %d) differs:\n%s\n%s", code, out1.String(), out2.String())
	}
	errOut.Reset()
	if code := run([]string{"sim", "--iwarp", "--loss", "0.1"}, &out1, &errOut); code != 2 || !strings.Contains(errOut.String(), "do not apply to iWARP") {
		t.Fatalf("--iwarp --loss: exit %d, %s", code, errOut.String())
	}
}
