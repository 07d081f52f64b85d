package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestPrintMarkdown: each row is one table line with its figures, skips
// and failures say so in the rnic cell, a '|' inside a cell cannot split
// it, and notes of rows that ran follow the table.
func TestPrintMarkdown(t *testing.T) {
	rows := []row{
		{workload: "WRITE lat", rnic: "7.0 µs", baseline: "UDP 3.5 µs", ratio: 2, better: "lower is better", note: "the reader's poll"},
		{workload: "TAP rows", skip: "no /dev/net/tun"},
		{workload: "setup", err: errors.New("a | b"), note: "hidden"},
	}
	var b bytes.Buffer
	printMarkdown(&b, "2 × CPU", rows)
	want := []string{
		"Measured by `make bench` on 2 × CPU.",
		"| workload | rnic | baseline | rnic/baseline |",
		"| WRITE lat | 7.0 µs | UDP 3.5 µs | 2.00 (lower is better) |",
		"| TAP rows | skipped: no /dev/net/tun |  |  |",
		`| setup | failed: a \| b |  |  |`,
		"- WRITE lat: the reader's poll",
	}
	got := b.String()
	for _, w := range want {
		if !strings.Contains(got, w+"\n") {
			t.Errorf("missing line %q in\n%s", w, got)
		}
	}
	if strings.Contains(got, "hidden") {
		t.Errorf("the note of a failed row was printed:\n%s", got)
	}
}
