package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// printMarkdown writes rows as a Markdown table under a line naming the
// machine, so that a table pasted into a README says where it was measured.
// Cells keep the text of the plain table; a '|' in a cell is escaped.
func printMarkdown(w io.Writer, machine string, rows []row) {
	fmt.Fprintf(w, "Measured by `make bench` on %s.\n\n", machine)
	fmt.Fprintln(w, "| workload | rnic | baseline | rnic/baseline |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, r := range rows {
		cells := [4]string{r.workload, r.rnic, r.baseline, ""}
		switch {
		case r.skip != "":
			cells[1], cells[2] = "skipped: "+r.skip, ""
		case r.err != nil:
			cells[1], cells[2] = "failed: "+r.err.Error(), ""
		default:
			cells[3] = fmt.Sprintf("%.2f (%s)", r.ratio, r.better)
		}
		for i, c := range cells {
			cells[i] = strings.ReplaceAll(c, "|", `\|`)
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells[:], " | "))
	}
	var notes []string
	for _, r := range rows {
		if r.note != "" && r.err == nil && r.skip == "" {
			notes = append(notes, fmt.Sprintf("- %s: %s", r.workload, r.note))
		}
	}
	if len(notes) > 0 {
		fmt.Fprintf(w, "\n%s\n", strings.Join(notes, "\n"))
	}
}

// machine names where the run happened: the CPU model and count, the
// kernel, the Go version, the commit and the day.
func machine() string {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	kernel := "unknown kernel"
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = "Linux " + strings.TrimSpace(string(b))
	}
	commit := "unknown commit"
	if out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output(); err == nil {
		commit = "commit " + strings.TrimSpace(string(out))
	}
	return fmt.Sprintf("%d × %s, %s, %s, %s, %s", runtime.NumCPU(), cpu, kernel, runtime.Version(), commit, time.Now().UTC().Format("2006-01-02"))
}
