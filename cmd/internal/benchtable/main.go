// Command benchtable is `make bench`: it runs the performance workloads of
// the performance goals with short iteration counts, each beside its baseline measured
// in the same run, and prints one table (workload, rnic, baseline, ratio)
// so that the next change can be compared in one run. Timing never fails
// anything: a workload that cannot run prints its error in its row.
//
// It drives the built binaries (bin/rnic, bin/rnicd) and `go test -bench`,
// as a user would; it uses no package of rnic.
//
//	go run ./cmd/internal/benchtable [-bin DIR] [-quick] [-only GROUP] [-markdown]
//
// -markdown prints the table as Markdown, headed by the machine it ran on,
// as the README's performance table is kept.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"text/tabwriter"
)

// row is one line of the table. ratio is rnic/baseline; "better" says
// which way is good (for a latency, lower).
type row struct {
	workload string
	rnic     string
	baseline string
	ratio    float64
	better   string
	err      error
	skip     string // why the workload did not run here
	note     string // where the time went, for a target missed
}

// bench is a run's settings.
type bench struct {
	bin   string // folder of rnic and rnicd
	iters int    // scale of the perf runs (1: the default counts)
	tmp   string
}

func main() {
	bin := flag.String("bin", "bin", "folder holding the rnic and rnicd binaries")
	quick := flag.Bool("quick", false, "a tenth of the iterations")
	only := flag.String("only", "", "run one group of rows: perf, procs, dropin, tap, sim or setup")
	markdown := flag.Bool("markdown", false, "print the table as Markdown, headed by the machine")
	flag.Parse()
	tmp, err := os.MkdirTemp("", "rnic-bench-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
	defer os.RemoveAll(tmp)
	b := &bench{bin: *bin, iters: 10, tmp: tmp}
	if *quick {
		b.iters = 1
	}
	var rows []row
	groups := []struct {
		name string
		rows func() []row
	}{{"perf", b.perfRows}, {"procs", b.twoProcessRows}, {"dropin", b.dropinRows}, {"tap", b.tapRows}, {"sim", b.simRows}, {"setup", b.setupRows}}
	for _, g := range groups {
		if *only != "" && *only != g.name {
			continue
		}
		f := g.rows
		got := f()
		for _, r := range got {
			fmt.Fprintf(os.Stderr, "benchtable: %s done\n", r.workload)
		}
		rows = append(rows, got...)
	}
	if *markdown {
		printMarkdown(os.Stdout, machine(), rows)
		return
	}
	print(rows)
}

func (b *bench) rnic() string  { return filepath.Join(b.bin, "rnic") }
func (b *bench) rnicd() string { return filepath.Join(b.bin, "rnicd") }

// print writes the table to stdout.
func print(rows []row) {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "workload\trnic\tbaseline\trnic/baseline\t")
	fmt.Fprintln(w, "--------\t----\t--------\t-------------\t")
	for _, r := range rows {
		if r.skip != "" {
			fmt.Fprintf(w, "%s\tskipped: %s\t\t\t\n", r.workload, r.skip)
			continue
		}
		if r.err != nil {
			fmt.Fprintf(w, "%s\tfailed: %v\t\t\t\n", r.workload, r.err)
			continue
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%.2f (%s)\t\n", r.workload, r.rnic, r.baseline, r.ratio, r.better)
	}
	w.Flush()
	for _, r := range rows {
		if r.note != "" && r.err == nil && r.skip == "" {
			fmt.Printf("%s: %s\n", r.workload, r.note)
		}
	}
}
