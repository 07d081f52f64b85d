package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDemoHintNamesTheBinary: the demo's closing hint names the program
// as it was run (bin/rnic after make build), so pasting it works.
func TestDemoHintNamesTheBinary(t *testing.T) {
	bin := rnicBinary(t)
	pcap := filepath.Join(t.TempDir(), "d.pcap")
	p := start(t, "demo", "demo", "--pcap", pcap, "--addr-a", "127.0.23.2", "--addr-b", "127.0.23.3", "--port", "24851")
	out := p.wait(t, 60*time.Second)
	if want := "\n  " + bin + " decode --port 24851,24851 " + pcap + "\n"; !strings.Contains(out, want) {
		t.Errorf("no %q in\n%s", want, out)
	}
}
