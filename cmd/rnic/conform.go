package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"

	"github.com/spf13/pflag"

	"github.com/rnic/rnic/cmd/internal/conform"
	"github.com/rnic/rnic/cmd/internal/conform/agent"
)

const conformHelp = `usage: rnic conform agent [-d DEVICE] [--addr IP | --tap NAME --ip CIDR] [--transport roce|iwarp] [--listen ADDR:PORT] [--tester IP]
       rnic conform run --agent HOST:PORT [--udp IP | --tap NAME --ip CIDR] [--transport roce|iwarp]
                        [--only PATTERN] [--pcap FILE] [--json | --junit FILE] [--list]
       rnic conform report [-o DIR] [--pcap FILE] RUN.json...

Protocol conformance: checks a device under test (DUT) against named spec
rules, on the wire, and reports rule by rule what it does right and wrong.

The agent runs beside the DUT and does what an application there would do
(create QPs, post work requests, poll completions, read its memory) when
the tester asks, over a TCP connection it accepts from the tester's
address only (--tester; loopback by default). -d is any device rnic
opens: NAME (default rnic0) is a NIC of the agent's own process, in the
embedded mode on --addr or on a TAP (--tap, --ip: root), NAME@SOCKET a NIC
of rnicd, verbs:NAME a libibverbs device (rxe0, siw0, mlx5_0) in a build
with -tags verbs.

The tester (run) owns a raw port on the DUT's wire — its own UDP socket on
--udp (RoCEv2 port 4791 of that address), or a TAP device (--tap, root);
for --transport iwarp its own kernel TCP connections from and to --udp,
where it speaks MPA, DDP and RDMAP by hand (RFC 5044, 5041, 5040, 6581,
7306) — crafts each case's frames there, checks the DUT's answers and drives the
DUT through the agent. Each case is named after the rule it checks
(IBTA Vol 1 chapter 9, its C9-nn rule where it has one) and ends pass,
FAIL (the DUT broke the rule), deviation-known (a departure documented
for the DUT's kind), not-applicable, or could-not-run (its setup failed,
the agent stopped answering or the DUT's reply did not parse: nothing is
said of the rule). A departure met on the way to the case's own rule is
a finding named after its root cause, beside the verdict. The evidence
names frames by their number in --pcap.

    rnic conform agent --addr 127.0.0.2 --listen 127.0.0.1:7471 &
    rnic conform run --agent 127.0.0.1:7471 --udp 127.0.0.3

    rnic conform agent --addr 127.0.0.2 --transport iwarp --listen 127.0.0.1:7472 &
    rnic conform run --agent 127.0.0.1:7472 --udp 127.0.0.3 --transport iwarp

The report subcommand turns runs' JSON and captures into report.md and a
self-contained report.html: each departure from the spec once, under its
root cause, with the rules it touched, the spec section, the evidence, a
ladder of the frames and the command that runs the case again (rnic
conform report --help).

Exits 1 when a case FAILs (or the lab saw it crash the DUT) or the run
cannot start, 3 when none did but some case could not run, 2 on bad usage.

flags of run:
`

func runConform(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "agent":
			return runConformAgent(args[1:], stdout, stderr)
		case "run":
			return runConformRun(args[1:], stdout, stderr)
		case "report":
			return runConformReport(args[1:], stdout, stderr)
		}
	}
	fs, _ := newConformRunFlags()
	if len(args) > 0 && (args[0] == "--help" || args[0] == "-h") {
		fs.SetOutput(stdout)
		fs.Usage()
		fmt.Fprint(stdout, "\nflags of agent:\n")
		afs, _ := newConformAgentFlags()
		afs.SetOutput(stdout)
		afs.PrintDefaults()
		fmt.Fprint(stdout, "\nflags of report:\n")
		rfs, _ := newConformReportFlags()
		rfs.SetOutput(stdout)
		rfs.PrintDefaults()
		return 0
	}
	what := "give a subcommand: agent, run or report"
	if len(args) > 0 {
		what = fmt.Sprintf("no subcommand %q: agent, run or report", args[0])
	}
	fmt.Fprintf(stderr, "rnic conform: %s (rnic help conform)\n", what)
	return 2
}

type conformAgentFlags struct {
	dev, addr, listen, tester, pcap, transport string
	port                                       uint16
	tf                                         *tapFlags
}

func newConformAgentFlags() (*pflag.FlagSet, *conformAgentFlags) {
	fs := pflag.NewFlagSet("rnic conform agent", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := &conformAgentFlags{}
	fs.StringVarP(&f.dev, "ib-dev", "d", "rnic0", "the DUT: NAME (a NIC of this process), NAME@SOCKET (rnicd) or verbs:NAME (libibverbs)")
	fs.StringVar(&f.addr, "addr", "127.0.0.2", "the address of this process's NIC (embedded mode)")
	fs.Uint16Var(&f.port, "port", 4791, "the RoCEv2 UDP port of this process's NIC")
	fs.StringVar(&f.transport, "transport", "roce", "what this process's NIC speaks: roce, or iwarp (MPA over kernel TCP on --addr)")
	fs.StringVar(&f.listen, "listen", "127.0.0.1:7471", "the address and port the agent listens on")
	fs.StringVar(&f.tester, "tester", "", "the only address the tester may connect from (default: loopback addresses)")
	fs.StringVar(&f.pcap, "pcap", "", "record this process's NIC's frames to this pcap file")
	f.tf = addTAPFlags(fs, false)
	fs.Usage = func() { fmt.Fprint(fs.Output(), conformHelp) }
	return fs, f
}

func runConformAgent(args []string, stdout, stderr io.Writer) int {
	fs, f := newConformAgentFlags()
	cmd := toolCommand{name: "conform", stdout: stdout, stderr: stderr}
	var opt agent.DeviceOptions
	var tester netip.Addr
	code, ok := cmd.parse(fs, args, func() error {
		if fs.NArg() > 0 {
			return fmt.Errorf("unexpected argument %q", fs.Arg(0))
		}
		var err error
		if opt.Addr, err = netip.ParseAddr(f.addr); err != nil {
			return fmt.Errorf("--addr: %w", err)
		}
		if f.tester != "" {
			if tester, err = netip.ParseAddr(f.tester); err != nil {
				return fmt.Errorf("--tester: %w", err)
			}
		}
		if _, _, err := net.SplitHostPort(f.listen); err != nil {
			return fmt.Errorf("--listen: %w", err)
		}
		switch f.transport {
		case "roce":
		case "iwarp":
			opt.IWARP = true
		default:
			return fmt.Errorf("--transport %q: roce or iwarp", f.transport)
		}
		opt.Device, opt.Port = f.dev, f.port
		cfgs, err := f.tf.configs()
		if err != nil {
			return err
		}
		if len(cfgs) > 0 {
			if opt.IWARP {
				return errors.New("--transport iwarp: the agent's iWARP NIC runs on kernel TCP at --addr, not on a TAP")
			}
			opt.TAP = &cfgs[0]
		}
		return nil
	})
	if !ok {
		return code
	}
	pw, code, ok := cmd.pcap(f.pcap)
	if !ok {
		return code
	}
	if pw != nil {
		defer pw.Close()
		opt.Pcap = pw
	}
	dev, err := agent.OpenDevice(opt)
	if err != nil {
		fmt.Fprintf(stderr, "rnic %s\n", withPrefix("conform: ", err))
		return 1
	}
	defer dev.Close()
	srv, err := agent.Listen(agent.Config{Device: dev, Listen: f.listen, Tester: tester, Log: stderr})
	if err != nil {
		fmt.Fprintf(stderr, "rnic %s\n", withPrefix("conform: ", err))
		return 1
	}
	fmt.Fprintf(stdout, "rnic conform agent: %s on %s, listening on %v\n", dev.Name(), opt.Device, srv.Addr())
	ctx, stop := signalContext()
	defer stop()
	if err := srv.Run(ctx); err != nil {
		fmt.Fprintf(stderr, "rnic %s\n", withPrefix("conform: ", err))
		return 1
	}
	if code, ok := signalStatus(ctx, stderr, "conform"); ok {
		return code
	}
	return 0
}

type conformRunFlags struct {
	agent, udp, transport, only, pcap, junit, dutAddr string
	json, list                                        bool
	slow                                              float64
	dutPort                                           uint16
	tf                                                *tapFlags
}

func newConformRunFlags() (*pflag.FlagSet, *conformRunFlags) {
	fs := pflag.NewFlagSet("rnic conform run", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := &conformRunFlags{}
	fs.StringVar(&f.agent, "agent", "", "the agent's HOST:PORT")
	fs.StringVar(&f.udp, "udp", "127.0.0.3", "the tester's address: its RoCEv2 port is UDP 4791 there; iWARP: its TCP connections")
	fs.StringVar(&f.transport, "transport", "roce", "the cases: roce or iwarp")
	fs.StringVar(&f.only, "only", "", "run only the cases whose rule id, section or title contains this (comma-separated alternatives; =ID: exactly that case)")
	fs.StringVar(&f.pcap, "pcap", "", "record every frame of the tester's port, numbered as the evidence cites them")
	fs.BoolVar(&f.json, "json", false, "print the report as JSON")
	fs.StringVar(&f.junit, "junit", "", "also write the report as JUnit XML to this file")
	fs.StringVar(&f.dutAddr, "dut-addr", "", "the DUT's address (default: its GID of the tester's address family)")
	fs.Uint16Var(&f.dutPort, "port", 4791, "the RoCEv2 UDP port of the DUT and of the tester's socket (--udp)")
	fs.Float64Var(&f.slow, "slow", 1, "scale every wait bound (a slow DUT or a busy machine)")
	fs.BoolVar(&f.list, "list", false, "list the cases and exit")
	f.tf = addTAPFlags(fs, false)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), conformHelp)
		fs.PrintDefaults()
	}
	return fs, f
}

// resolve checks run's flags and fills opt.
func (f *conformRunFlags) resolve(fs *pflag.FlagSet, opt *conform.Options) error {
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	switch conform.Transport(f.transport) {
	case conform.RoCE, conform.IWARP:
		opt.Transport = conform.Transport(f.transport)
	default:
		return fmt.Errorf("--transport %q: roce or iwarp", f.transport)
	}
	if !(f.slow >= 0.01 && f.slow <= 100) {
		return fmt.Errorf("--slow %v: between 0.01 and 100", f.slow)
	}
	opt.Only, opt.Slow, opt.DUTPort, opt.UDPPort = f.only, f.slow, f.dutPort, f.dutPort
	if f.list {
		return nil
	}
	if _, _, err := net.SplitHostPort(f.agent); err != nil {
		return fmt.Errorf("--agent %q: want HOST:PORT", f.agent)
	}
	opt.Agent = f.agent
	var err error
	if f.dutAddr != "" {
		if opt.DUTAddr, err = netip.ParseAddr(f.dutAddr); err != nil {
			return fmt.Errorf("--dut-addr: %w", err)
		}
	}
	return f.resolvePort(opt)
}

func (f *conformRunFlags) resolvePort(opt *conform.Options) error {
	cfgs, err := f.tf.configs()
	if err != nil {
		return err
	}
	if len(cfgs) > 0 {
		c := cfgs[0]
		if len(c.Prefixes) == 0 {
			return errors.New("--tap needs --ip")
		}
		opt.TAP, opt.TAPIP, opt.TAPMAC, opt.TAPNetns, opt.TAPBridge, opt.TAPMTU = c.TAP, c.Prefixes[0], c.MAC, c.Netns, c.Bridge, c.MTU
		return nil
	}
	if opt.UDP, err = netip.ParseAddr(f.udp); err != nil {
		return fmt.Errorf("--udp: %w", err)
	}
	return nil
}

func runConformRun(args []string, stdout, stderr io.Writer) int {
	fs, f := newConformRunFlags()
	cmd := toolCommand{name: "conform", stdout: stdout, stderr: stderr}
	var opt conform.Options
	if code, ok := cmd.parse(fs, args, func() error { return f.resolve(fs, &opt) }); !ok {
		return code
	}
	if f.list {
		for _, c := range conform.Cases(opt.Transport, opt.Only) {
			fmt.Fprintf(stdout, "%-28s %-26s %s\n", c.ID, c.Section, c.Title)
		}
		return 0
	}
	pw, code, ok := cmd.pcap(f.pcap)
	if !ok {
		return code
	}
	if pw != nil {
		defer pw.Close()
		opt.Pcap = pw
	}
	if !f.json {
		opt.Progress = func(r conform.Result) { fmt.Fprintf(stderr, "%-15s %s\n", r.Verdict, r.ID) }
	}
	ctx, stop := signalContext()
	defer stop()
	rep, err := conform.Main(ctx, opt)
	if code, ok := signalStatus(ctx, stderr, "conform"); ok {
		return code
	}
	if err != nil {
		fmt.Fprintf(stderr, "rnic %s\n", withPrefix("conform: ", err))
		return 1
	}
	return writeConformReport(rep, f, stdout, stderr)
}

func writeConformReport(rep *conform.Report, f *conformRunFlags, stdout, stderr io.Writer) int {
	var err error
	if f.json {
		err = rep.WriteJSON(stdout)
	} else {
		err = rep.WriteText(stdout)
	}
	if err == nil && f.junit != "" {
		var w *os.File
		if w, err = os.Create(f.junit); err == nil {
			err = rep.WriteJUnit(w)
			if e := w.Close(); err == nil {
				err = e
			}
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "rnic %s\n", withPrefix("conform: ", err))
		return 1
	}
	return rep.ExitCode()
}
