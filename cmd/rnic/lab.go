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
       rnic lab run NAME [--iwarp | --tap] [--trace] [--pcap FILE.pcapng] [--ladder FILE.html|FILE.svg]

Named teaching scenarios: each a short run of two NICs on a simulated link
with a virtual clock that shows one protocol behaviour (a lost packet and
the timeout, a PSN sequence error NAK, an RNR NAK, a replayed atomic, ...),
with its faults scripted rather than drawn at random, so every run prints
the same lines, trace and capture. list names them, with the spec section
and what to look for; run prints the narration (every post and completion
at its virtual time, the QPs' states, the counters that moved), and with
--trace the engines' every decision. The handout of each scenario is
cmd/internal/scenario/handouts/NAME.md.

With --tap (root) a RoCEv2 scenario runs between two TAP-mode NICs on a
bridge in a network namespace the command creates and deletes, its script
applied to the frames on rnic0's TAP, on the real clock: the same steps,
faults and verdicts, with times (and QPNs) that differ from run to run.

flags of run:
`

func runLab(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("rnic lab", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	trace := fs.Bool("trace", false, "print the engines' trace: every PSN, ACK, NAK and timer decision")
	pcapPath := fs.String("pcap", "", "write every frame on the link to this pcapng file, with the link's notes as packet comments")
	ladderPath := fs.String("ladder", "", "draw the run as a ladder diagram (FILE.svg or FILE.html)")
	iwarp := fs.Bool("iwarp", false, "run the scenario's iWARP form (rc-basics has one; mpa and terminate are iWARP's own)")
	onTAP := fs.Bool("tap", false, "run a RoCEv2 scenario on two TAP-mode NICs in a namespace of its own, on the real clock (root)")
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
		if *iwarp && *onTAP {
			fmt.Fprintln(stderr, "rnic lab: --iwarp and --tap: the TAP form is RoCEv2's only")
			return 2
		}
		return labRun(fs.Arg(1), labForm{iwarp: *iwarp, tap: *onTAP}, *trace, *pcapPath, *ladderPath, stdout, stderr)
	}
	fmt.Fprintln(stderr, "rnic lab: want list, or run NAME (rnic help lab)")
	return 2
}

// labForm is which form of a scenario to run: simulated RoCEv2, its
// iWARP form, or RoCEv2 on TAP NICs.
type labForm struct{ iwarp, tap bool }

func labRun(name string, form labForm, trace bool, pcapPath, ladderPath string, stdout, stderr io.Writer) int {
	sc, err := scenario.Find(name)
	if err == nil && form.iwarp {
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
	run := sc.Run
	if form.tap {
		run = sc.RunTAP
	}
	r, err := run()
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
