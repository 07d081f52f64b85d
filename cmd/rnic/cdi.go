// rnic cdi: gives containers rnicd's NICs through the Container Device
// Interface (cmd/internal/cdispec builds the spec): generate writes it,
// list shows what a container asking for each device gets, hook is the
// OCI hook the spec names.

package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"
	specs "tags.cncf.io/container-device-interface/specs-go"

	"github.com/rnic/rnic/cmd/internal/cdispec"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/client"
)

const cdiHelp = `usage: rnic cdi generate [-S SOCKET] [--output FILE] [--libdir DIR]
       rnic cdi list [--spec-dir DIR]...
       rnic cdi hook [-S SOCKET]

Gives containers the NICs of an rnicd through CDI, the Container Device
Interface that podman, CRI-O and containerd read:

    rnic cdi generate            # as root: writes /etc/cdi/rnic.yaml
    podman run --device rnic.dev/nic=rnic0 IMAGE ib_write_bw ...

generate asks the rnicd on SOCKET for its NICs and writes a spec of kind
` + cdispec.Kind + ` with one device per NIC (named as the daemon names it)
and "all". Any of them mounts the daemon's socket at ` + cdispec.ContainerSocket + `
and the drop-in libibverbs and librdmacm at ` + cdispec.ContainerLibDir + `,
read-only, sets RNIC_SOCKET and LD_LIBRARY_PATH, and gives the container
the view rnic exec gives a program: /dev/infiniband/uverbsN and rdma_cm,
and /sys/class/infiniband/NAME/ and /sys/class/infiniband_verbs/, added by
the OCI hook "rnic cdi hook" (the runtime runs it, with this rnic's path).
The NIC's address is on an interface when the container shares the
network namespace where rnicd's address is (podman --network host, or
--network ns:PATH). Run generate again when rnicd restarts: the socket is
bound by its file.
--output - writes the spec to standard output; /var/run/cdi/rnic.yaml is
the place for a spec that should not outlive a reboot.

list reads the spec directories (default /etc/cdi and /var/run/cdi) as a
runtime does and prints, for each rnic.dev/nic device, the device nodes,
mounts, environment and hooks a container gets.

hook is run by the runtime, not by hand: the container's OCI state on
standard input, in the container's namespaces before it starts.
`

// defaultSpecPath is where generate writes unless told.
const defaultSpecPath = "/etc/cdi/rnic.yaml"

func runCDI(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "--help" || args[0] == "-h" {
		w := stdout
		if len(args) == 0 {
			w = stderr
		}
		fmt.Fprint(w, cdiHelp)
		for _, sub := range []func([]string, io.Writer, io.Writer) int{runCDIGenerate, runCDIList, cdiHookHelp} {
			sub([]string{"--help"}, w, stderr)
		}
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	sub, rest := args[0], args[1:]
	switch sub {
	case "generate":
		return runCDIGenerate(rest, stdout, stderr)
	case "list":
		return runCDIList(rest, stdout, stderr)
	case "hook":
		return runCDIHook(rest, os.Stdin, stdout, stderr)
	}
	fmt.Fprintf(stderr, "rnic cdi: no such subcommand %q (rnic help cdi)\n", sub)
	return 2
}

// cdiHookHelp prints the hook's flags.
func cdiHookHelp(args []string, stdout, stderr io.Writer) int {
	return runCDIHook(args, nil, stdout, stderr)
}

// parseCDIFlags parses a subcommand's flags; done says the command is
// over (its flags were printed for --help, or the usage was wrong) with
// status.
func parseCDIFlags(fs *pflag.FlagSet, args []string, stdout, stderr io.Writer) (done bool, status int) {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	switch {
	case errors.Is(err, pflag.ErrHelp):
		// "flags of generate:", as rnic conform's help names its sets
		// (the man pages read them so)
		fmt.Fprintf(stdout, "\nflags of %s:\n", strings.TrimPrefix(fs.Name(), "rnic cdi "))
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return true, 0
	case err != nil:
		fmt.Fprintf(stderr, "%s: %v (rnic help cdi)\n", fs.Name(), err)
		return true, 2
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "%s: unexpected %q (rnic help cdi)\n", fs.Name(), fs.Arg(0))
		return true, 2
	}
	return false, 0
}

func runCDIGenerate(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("rnic cdi generate", pflag.ContinueOnError)
	socket := fs.StringP("socket", "S", "", "the rnicd's control socket (default: "+ibv.SocketRule+")")
	output := fs.StringP("output", "o", defaultSpecPath, "where to write the spec; - for standard output")
	libDir := fs.String("libdir", "", "the directory of the drop-in libraries (default: as rnic exec finds it)")
	if done, st := parseCDIFlags(fs, args, stdout, stderr); done {
		return st
	}
	spec, err := generateSpec(*socket, *libDir)
	if err != nil {
		fmt.Fprintf(stderr, "rnic cdi generate: %v\n", err)
		return 1
	}
	if *output == "-" {
		b, err := cdispec.Marshal(spec)
		if err != nil {
			fmt.Fprintf(stderr, "rnic cdi generate: %v\n", err)
			return 1
		}
		stdout.Write(b)
		return 0
	}
	if err := cdispec.Write(spec, *output); err != nil {
		fmt.Fprintf(stderr, "rnic cdi generate: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %s: %d devices of %s\n", *output, len(spec.Devices), cdispec.Kind)
	return 0
}

// generateSpec asks the daemon for its NICs and builds their spec, the
// hook being this rnic binary.
func generateSpec(socket, libDir string) (*specs.Spec, error) {
	if socket == "" {
		socket = ibv.DefaultSocketPath()
	}
	socket, err := filepath.Abs(socket)
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err == nil {
		self, err = filepath.EvalSymlinks(self)
	}
	if err != nil {
		return nil, err
	}
	if libDir, err = findLibDir(libDir, self); err != nil {
		return nil, err
	}
	st, err := client.QueryStat(socket)
	if err != nil {
		return nil, err
	}
	nics := make([]cdispec.NIC, len(st.Devices))
	for i, d := range st.Devices {
		nics[i] = cdispec.NIC{Index: i, Name: d.Name}
	}
	return cdispec.Spec(nics, cdispec.Options{Socket: socket, LibDir: libDir,
		Hook: cdispec.HookCommand(self, socket)})
}
