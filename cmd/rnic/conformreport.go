package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/rnic/rnic/cmd/internal/conform/publish"
	"github.com/rnic/rnic/cmd/internal/ladder"
)

const conformReportHelp = `usage: rnic conform report [-o DIR] [--pcap FILE] [--title TEXT] RUN.json...

Writes the report of conform runs (the JSON of rnic conform run --json, or
make conform-lab's conform-KIND.json) into DIR: report.md and a
self-contained report.html. Per DUT (device, kind, host kernel, date):
the verdicts counted, then each departure from the spec once, under its
root cause (a crash of the DUT's host, a finding many cases met, a FAILed
rule, a known deviation), with the spec section it breaks, the evidence,
a ladder of the frames of one case that shows it and the command lines
that run that case again; cases that could not run, apart.

The frames come from the run's capture: --pcap (the capture of rnic
conform run --pcap, with one RUN.json), else the directory named like
the JSON without its extension, one capture per case (make conform-lab),
else the capture so named (RUN.pcap beside RUN.json: make conform-self).

flags:
`

type conformReportFlags struct{ out, pcap, title string }

func newConformReportFlags() (*pflag.FlagSet, *conformReportFlags) {
	fs := pflag.NewFlagSet("rnic conform report", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := &conformReportFlags{}
	fs.StringVarP(&f.out, "output", "o", "conform-report", "the directory to write report.md, report.html and the ladders into")
	fs.StringVar(&f.pcap, "pcap", "", "the run's capture (rnic conform run --pcap), with one RUN.json")
	fs.StringVar(&f.title, "title", "", "the report's title")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), conformReportHelp)
		fs.PrintDefaults()
	}
	return fs, f
}

func runConformReport(args []string, stdout, stderr io.Writer) int {
	fs, f := newConformReportFlags()
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fs.SetOutput(stdout)
			fs.Usage()
			return 0
		}
		fmt.Fprintf(stderr, "rnic conform report: %v (rnic help conform)\n", err)
		return 2
	}
	if fs.NArg() == 0 || f.pcap != "" && fs.NArg() > 1 {
		fmt.Fprintln(stderr, "rnic conform report: give RUN.json (one with --pcap) (rnic help conform)")
		return 2
	}
	var runs []publish.Run
	for _, p := range fs.Args() {
		run, err := publish.LoadRun(p, f.pcap)
		if err != nil {
			fmt.Fprintf(stderr, "rnic conform report: %v\n", err)
			return 1
		}
		runs = append(runs, run)
	}
	if err := publish.Write(f.out, runs, publish.Options{Title: f.title, Ladder: conformLadder}); err != nil {
		fmt.Fprintf(stderr, "rnic conform report: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "rnic conform report: %s, %s\n", filepath.Join(f.out, publish.MarkdownFile), filepath.Join(f.out, publish.HTMLFile))
	return 0
}

// conformLadder draws frames from..to of a case's capture, as rnic ladder
// does.
func conformLadder(capture string, from, to int, title string) ([]byte, error) {
	return ladder.CaptureSVG(capture, ladder.Options{From: from, To: to, Title: title})
}
