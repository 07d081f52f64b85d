package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"github.com/rnic/rnic/cmd/internal/sim"
	"github.com/rnic/rnic/transport/pcap"
)

const simHelp = `usage: rnic sim [flags]

Runs two rnic NICs against each other over a simulated link with a virtual
clock: several RC QP pairs carry a random mix of SEND, RDMA WRITE, RDMA READ,
CmpSwap and FetchAdd in both directions, sizes from 0 to --max-msg, while the
link loses, reorders, duplicates and corrupts frames as asked. Every
completion, byte and atomic result is checked against a reference model.

Prints both NICs' counters, then exactly one line:

  sim: ops=N ok=N failed=N bytes=N mismatched_bytes=N virtual_time=DURATION

--timing adds, before it, the run's cost in real time:

  timing: wall=DURATION cpu=DURATION packets=N packets_per_cpu_second=R

(packets: RoCEv2 packets, or iWARP FPDUs, sent plus received by both NICs).

With --iwarp the QP pairs are iWARP's instead, connected through the iWARP
connection manager (MPA Request/Reply, RTR) over simulated TCP streams on the
virtual clock, which split and coalesce bytes at random points (--chop). TCP
is reliable, so --loss, --reorder, --dup and --corrupt are refused (a
corrupted FPDU fails its CRC and terminates the connection); --mtu does not
apply (FPDUs fit 1460-byte segments).

Both forms exit 1 if any operation failed or any byte or atomic result differs
(2 on bad usage). Time is virtual: retries and timeouts cost no wall time,
and a run replays exactly from its seed: QPNs, UDP source ports, keys,
buffer addresses, workload and faults all come from it, so the same seed
gives the same output, trace and --pcap file, byte for byte.

flags:
`

// simBounds are the ranges of sim's integer flags; sim.Run checks what
// they need together (the buffers of every QP).
var simBounds = []bound{
	{"ops", 0, 1 << 26},
	{"qps", 1, sim.MaxQPs},
	{"depth", 1, sim.MaxDepth},
	{"max-msg", 1, sim.MaxMaxMsg},
}

// simFlags are `rnic sim`'s flags besides the Config fields they fill.
type simFlags struct {
	fs            *pflag.FlagSet
	cfg           sim.Config
	pcap, ladder  *string
	trace, timing *bool
}

func newSimFlags() *simFlags {
	fs := pflag.NewFlagSet("rnic sim", pflag.ContinueOnError)
	// pflag prints the usage itself on --help before returning ErrHelp;
	// it is printed once, below, on stdout, and errors once on stderr.
	fs.SetOutput(io.Discard)
	f := &simFlags{fs: fs}
	cfg := &f.cfg
	fs.IntVar(&cfg.Ops, "ops", sim.DefaultOps, "operations in all")
	fs.IntVar(&cfg.QPs, "qps", sim.DefaultQPs, "RC QP pairs")
	fs.Float64Var(&cfg.Loss, "loss", 0, "probability that a frame is lost")
	fs.Float64Var(&cfg.Reorder, "reorder", 0, "probability that a frame is reordered")
	fs.Float64Var(&cfg.Dup, "dup", 0, "probability that a frame is duplicated")
	fs.Float64Var(&cfg.Corrupt, "corrupt", 0, "probability that a frame is corrupted")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "seed of the workload and the link")
	fs.IntVar(&cfg.MTU, "mtu", sim.DefaultMTU, "path MTU: 256, 512, 1024, 2048 or 4096")
	fs.IntVar(&cfg.MaxMsg, "max-msg", sim.DefaultMaxMsg, "largest message in bytes")
	fs.IntVar(&cfg.Depth, "depth", sim.DefaultDepth, "outstanding operations per QP")
	f.pcap = fs.String("pcap", "", "write every frame on the link to this pcap file (FILE.pcapng: with the link's notes as packet comments)")
	fs.BoolVar(&cfg.IWARP, "iwarp", false, "iWARP over simulated TCP instead of RoCEv2 over a simulated link")
	fs.Float64Var(&cfg.Chop, "chop", sim.DefaultChop, "iWARP: probability that a stream segment or delivery is cut at a random point")
	f.trace = fs.Bool("trace", false, "print every QP state change and PSN/ACK/NAK decision")
	f.ladder = fs.String("ladder", "", "draw the run as a ladder diagram (FILE.svg or FILE.html): lost, duplicated, corrupted, delayed frames and timer expiries marked")
	f.timing = fs.Bool("timing", false, "print the run's wall and CPU time and its packets per CPU-second before the sim line (the one line that differs between runs of a seed)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), simHelp)
		fs.PrintDefaults()
	}
	return f
}

// check checks the parsed flags' values and arguments.
func (f *simFlags) check() error {
	fs := f.fs
	err := checkBounds(fs, simBounds...)
	if err == nil {
		err = checkPathMTU(fs, "mtu")
	}
	if err == nil {
		err = checkProbabilities(fs, probability{"loss", false}, probability{"reorder", false},
			probability{"dup", false}, probability{"corrupt", false}, probability{"chop", true})
	}
	if err == nil && fs.NArg() != 0 {
		err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return err
}

func runSim(args []string, stdout, stderr io.Writer) int {
	f := newSimFlags()
	fs, cfg := f.fs, &f.cfg
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fs.SetOutput(stdout)
			fs.Usage()
			return 0
		}
		fmt.Fprintf(stderr, "rnic %s (rnic help sim)\n", withPrefix("sim: ", err))
		return 2
	}
	if err := f.check(); err != nil {
		fmt.Fprintf(stderr, "rnic %s (rnic help sim)\n", withPrefix("sim: ", err))
		return 2
	}
	if cfg.IWARP && cfg.Chop == 0 {
		cfg.Chop = -1 // --chop 0: never cut
	}
	if *f.pcap != "" {
		pf, err := os.Create(*f.pcap)
		if err != nil {
			fmt.Fprintf(stderr, "rnic %s\n", withPrefix("sim: ", err))
			return 2
		}
		defer pf.Close()
		cfg.Pcap, cfg.PcapNG = pf, pcap.IsNg(*f.pcap)
	}
	if *f.trace {
		cfg.Trace = stdout
	}
	return f.run(stdout, stderr)
}

// run runs the simulation the flags describe, draws its ladder and
// reports it.
func (f *simFlags) run(stdout, stderr io.Writer) int {
	cfg := &f.cfg
	var lad *simLadder
	if *f.ladder != "" {
		var err error
		if lad, err = newSimLadder(*f.ladder, cfg); err != nil {
			fmt.Fprintf(stderr, "rnic sim: %v (rnic help sim)\n", err)
			return 2
		}
	}
	clk := startSimClock()
	res, err := sim.Run(*cfg)
	if err != nil {
		fmt.Fprintf(stderr, "rnic %s\n", withPrefix("sim: ", err))
		return 2
	}
	if lad != nil {
		if err := lad.write(fmt.Sprintf("rnic sim --seed %d --loss %g --dup %g --corrupt %g --reorder %g", cfg.Seed, cfg.Loss, cfg.Dup, cfg.Corrupt, cfg.Reorder)); err != nil {
			fmt.Fprintf(stderr, "rnic sim: %v\n", err)
			return 2
		}
	}
	reportSim(stdout, res)
	if *f.timing {
		clk.printTiming(stdout, res)
	}
	fmt.Fprintln(stdout, res.Line())
	if !res.Passed() {
		return 1
	}
	return 0
}

// reportSim prints the counters either device counted and the failures.
func reportSim(stdout io.Writer, res *sim.Result) {
	fmt.Fprintf(stdout, "%-24s %14s %14s\n", "counter", "rnic0", "rnic1")
	for i, c := range res.CountersA {
		b := res.CountersB[i].Value
		if c.Value == 0 && b == 0 {
			continue
		}
		fmt.Fprintf(stdout, "%-24s %14d %14d\n", c.Name, c.Value, b)
	}
	for _, f := range res.Failures {
		fmt.Fprintf(stdout, "failure: %s\n", f)
	}
}
