// Command rnic is the command-line front end of the rnic software RDMA NIC:
// one binary, one subcommand per task (rnic help lists them).
package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/rnic/rnic/nic/view"
)

// command is one subcommand. run gets the arguments after the subcommand
// name and returns the exit status.
type command struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

// commands is the dispatch table. Adding a subcommand is one line here plus
// its own file.
var commands = []command{
	{"decode", "print the RoCEv2 frames and iWARP FPDUs of captures, checking ICRCs and MPA CRCs", runDecode},
	{"demo", "two NICs over loopback UDP perform every operation, explained step by step", runDemo},
	{"sim", "two NICs over a simulated faulty link under a checked workload", runSim},
	{"lab", "named teaching scenarios: one protocol behaviour each, scripted and replayable", runLab},
	{"pingpong", "ibv_rc_pingpong: bounce SENDs between two NICs, its output and side channel", runPingpong},
	{"perf", "perftest: bandwidth and latency of WRITE/READ/SEND/atomics, against raw UDP", runPerf},
	{"rping", "librdmacm rping: READ and WRITE a ping buffer steered by SENDs, rdma_cm over RoCEv2 or iWARP", runRping},
	{"devices", "list the RDMA devices rnic can use: its own NIC, rnicd's, libibverbs' (ibv_devices)", runDevices},
	{"devinfo", "a device's attributes, port, GID table and limits (ibv_devinfo [-v])", runDevinfo},
	{"exec", "run an unmodified libibverbs program (ibv_devinfo, ib_write_bw, ...) on rnicd's NICs", runExec},
	{"cdi", "give containers rnicd's NICs through CDI (podman --device rnic.dev/nic=rnic0): generate, list", runCDI},
	{"ladder", "draw a ladder diagram (SVG or HTML) of a capture's RoCEv2 and iWARP frames", runLadder},
	{"conform", "protocol conformance: check a device against named spec rules on the wire (agent + tester)", runConform},
	{"k8s", "kubelet device plugin: the node's rnicd NICs as the Kubernetes resource rnic.dev/nic", runK8s},
	{"stat", "what an rnicd serves: links, clients, their QPs, counters (rdma link/resource/statistic show)", runStat},
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches args (without the program name) and returns the exit
// status: 2 for a usage error, otherwise what the subcommand returns.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	name, rest := args[0], args[1:]
	switch name {
	case view.HolderCommand: // rnic exec's own: the holder of a view
		return view.RunHolder(rest)
	case "--version", "version":
		printVersion(stdout)
		return 0
	case "help", "-h", "--help":
		if len(rest) == 0 {
			usage(stdout)
			return 0
		}
		// rnic help CMD is rnic CMD --help.
		if c := lookup(rest[0]); c != nil {
			return c.run([]string{"--help"}, stdout, stderr)
		}
		fmt.Fprintf(stderr, "rnic: no such command %q\n", rest[0])
		usage(stderr)
		return 2
	}
	if c := lookup(name); c != nil {
		return c.run(rest, stdout, stderr)
	}
	fmt.Fprintf(stderr, "rnic: no such command %q\n", name)
	usage(stderr)
	return 2
}

// self is the program as the user ran it, for hints to paste: bin/rnic
// when run as bin/rnic (the build's output), rnic when found on PATH.
func self() string {
	if len(os.Args) > 0 && filepath.Base(os.Args[0]) == "rnic" {
		return os.Args[0]
	}
	return "rnic"
}

func lookup(name string) *command {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "rnic: a software RDMA NIC (RoCEv2, iWARP)")
	fmt.Fprintln(w, "\nusage: rnic COMMAND [flags] [args]")
	fmt.Fprintln(w, "\ncommands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "  %-10s %s\n", "help", "show this, or rnic help COMMAND for a command's flags")
	fmt.Fprintf(w, "  %-10s %s\n", "version", "rnic's version and build (also --version)")
}
