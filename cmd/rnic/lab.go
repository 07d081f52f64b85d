package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"github.com/rnic/rnic/cmd/internal/scenario"
)

const labHelp = `usage: rnic lab list
       rnic lab run NAME [--iwarp] [--trace] [--pcap FILE.pcapng] [--ladder FILE.html|FILE.svg]

Named teaching scenarios: each a short run of two NICs on a simulated link
with a virtual clock that shows one protocol behaviour (a lost packet and
the timeout, a PSN sequence error NAK, an RNR NAK, a replayed atomic, ...),
with its faults scripted rather than drawn at random, so every run prints
the same lines, trace and capture. list names them, with the spec section
and what to look for; run prints the narration (every post and completion
at its virtual time, the QPs' states, the counters that moved), and with
--trace the engines' every decision. The handout of each scenario is
cmd/internal/scenario/handouts/NAME.md.

flags of run:
`

func runLab(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("rnic lab", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	trace := fs.Bool("trace", false, "print the engines' trace: every PSN, ACK, NAK and timer decision")
	pcapPath := fs.String("pcap", "", "write every frame on the link to this pcapng file, with the link's notes as packet comments")
	ladderPath := fs.String("ladder", "", "draw the run as a ladder diagram (FILE.svg or FILE.html)")
	iwarp := fs.Bool("iwarp", false, "run the scenario's iWARP form (rc-basics has one; mpa and terminate are iWARP's own)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), labHelp)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fs.SetOutput(stdout)
			fs.Usage()
			return 0
		}
		fmt.Fprintf(stderr, "rnic lab: %v (rnic help lab)\n", err)
		return 2
	}
	switch {
	case fs.NArg() == 1 && fs.Arg(0) == "list":
		for _, sc := range scenario.All() {
			sc.Describe(stdout)
		}
		return 0
	case fs.NArg() == 2 && fs.Arg(0) == "run":
		return labRun(fs.Arg(1), *iwarp, *trace, *pcapPath, *ladderPath, stdout, stderr)
	}
	fmt.Fprintln(stderr, "rnic lab: want list, or run NAME (rnic help lab)")
	return 2
}

func labRun(name string, iwarp, trace bool, pcapPath, ladderPath string, stdout, stderr io.Writer) int {
	sc, err := scenario.Find(name)
	if err == nil && iwarp {
		sc, err = sc.IWARP()
	}
	if err != nil {
		fmt.Fprintf(stderr, "rnic lab: %v\n", err)
		return 2
	}
	if ladderPath != "" {
		if err := ladderOutput(ladderPath); err != nil {
			fmt.Fprintf(stderr, "rnic lab: --ladder: %v\n", err)
			return 2
		}
	}
	r, err := sc.Run()
	if err != nil {
		fmt.Fprintf(stderr, "rnic lab: %v\n", err)
		return 1
	}
	if trace {
		fmt.Fprint(stdout, r.Log)
	} else {
		fmt.Fprint(stdout, r.Output)
	}
	if pcapPath != "" {
		if err := os.WriteFile(pcapPath, r.Pcap, 0o644); err != nil {
			fmt.Fprintf(stderr, "rnic lab: %v\n", err)
			return 1
		}
	}
	if ladderPath != "" {
		if err := labLadder(ladderPath, r); err != nil {
			fmt.Fprintf(stderr, "rnic lab: ladder: %v\n", err)
			return 1
		}
	}
	return 0
}

// labLadder draws a scenario's run into the file at path (.html: the
// interactive page, else SVG).
func labLadder(path string, r *scenario.Run) error { return createLadder(path, r.Ladder) }
