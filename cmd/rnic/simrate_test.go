package main

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestSimTiming: --timing adds one line before the sim line, whose packet
// count is the sum of both NICs' sent_pkts and rcvd_pkts; every other
// line is the same as without the flag.
func TestSimTiming(t *testing.T) {
	args := []string{"sim", "--ops", "300", "--qps", "4", "--loss", "0.1", "--max-msg", "4096", "--seed", "19"}
	var plain, timed, errOut bytes.Buffer
	if code := run(args, &plain, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if code := run(append(args, "--timing"), &timed, &errOut); code != 0 {
		t.Fatalf("--timing: exit %d: %s", code, errOut.String())
	}
	lines := strings.Split(strings.TrimSuffix(timed.String(), "\n"), "\n")
	if len(lines) < 3 {
		t.Fatalf("output too short:\n%s", timed.String())
	}
	tl := lines[len(lines)-2]
	m := regexp.MustCompile(`^timing: wall=\S+ cpu=\S+ packets=(\d+) packets_per_cpu_second=\d+$`).FindStringSubmatch(tl)
	if m == nil {
		t.Fatalf("second-last line %q is not the timing line", tl)
	}
	rest := strings.Join(append(lines[:len(lines)-2:len(lines)-2], lines[len(lines)-1]), "\n") + "\n"
	if rest != plain.String() {
		t.Fatalf("apart from the timing line the output differs:\n%s\n---\n%s", rest, plain.String())
	}
	var want uint64
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) == 3 && (f[0] == "sent_pkts" || f[0] == "rcvd_pkts") {
			a, _ := strconv.ParseUint(f[1], 10, 64)
			b, _ := strconv.ParseUint(f[2], 10, 64)
			want += a + b
		}
	}
	if got, _ := strconv.ParseUint(m[1], 10, 64); want == 0 || got != want {
		t.Fatalf("timing counts %d packets, the counters %d", got, want)
	}
}
