package main

import (
	"bytes"
	"os"
	"path/filepath"
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

// TestSimReplays runs the issue's `rnic sim` at a smaller scale twice for
// one seed, the second time with every core busy: the output, the trace and
// the capture are byte-identical (QPNs, UDP source ports, keys, addresses,
// workload and faults all come from the seed). Over iWARP too.
func TestSimReplays(t *testing.T) {
	for _, args := range [][]string{
		{"sim", "--ops", "2000", "--qps", "8", "--loss", "0.1", "--reorder", "0.1", "--dup", "0.02", "--corrupt", "0.01",
			"--max-msg", "8192", "--seed", "4242", "--trace"},
		{"sim", "--iwarp", "--ops", "600", "--qps", "8", "--max-msg", "8192", "--seed", "4242", "--trace"},
	} {
		runOnce := func() (string, []byte) {
			pcap := filepath.Join(t.TempDir(), "sim.pcap")
			var out, errOut bytes.Buffer
			if code := run(append(args, "--pcap", pcap), &out, &errOut); code != 0 {
				t.Fatalf("%v: exit %d\n%s", args, code, errOut.String())
			}
			b, err := os.ReadFile(pcap)
			if err != nil {
				t.Fatal(err)
			}
			return out.String(), b
		}
		out1, pcap1 := runOnce()
		stop := contendCPU()
		out2, pcap2 := runOnce()
		stop()
		if out1 != out2 {
			t.Fatalf("%v: outputs of %d and %d bytes differ", args, len(out1), len(out2))
		}
		if len(pcap1) < 10000 || !bytes.Equal(pcap1, pcap2) {
			t.Fatalf("%v: captures of %d and %d bytes differ", args, len(pcap1), len(pcap2))
		}
	}
}
