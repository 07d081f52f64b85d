package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/passthrough"
	"github.com/rnic/rnic/nic/rnicd/client"
	"github.com/rnic/rnic/transport"
)

const devicesHelp = `usage: rnic devices [--socket PATH] [--addr IP]

Lists the RDMA devices rnic's commands can use, as ibv_devices does, with
their node GUID and backend:

    device                          node GUID         backend
    rnic0                           02007ffffe000002  in-process
    rnic0@/run/rnic/rnicd.sock      0200aafffe4d0032  rnicd

rnic0 is the NIC every command builds in its own process (the embedded
mode on loopback UDP: its GUID comes from the MAC derived from --addr,
default 127.0.0.2, and the node GUID is that of the NIC pingpong and perf
build there). NAME@SOCKET are the NICs of the rnicd on --socket (default
` + ibv.SocketRule + `; nothing is listed when no daemon listens on the
default socket), verbs:NAME the libibverbs devices of a build with -tags
verbs. rnic devinfo shows their attributes.

Exits 1 when a device cannot be opened or the daemon given by --socket
cannot be reached, 2 on bad usage.

flags:
`

// deviceEntry is a device rnic can open.
type deviceEntry struct {
	spec    ibv.Spec
	backend string
	open    func() (ibv.Device, error)
}

// deviceSources are the flags that say where to look for devices.
type deviceSources struct {
	socket string
	addr   string
}

func (s *deviceSources) add(flags *pflag.FlagSet) {
	flags.StringVar(&s.socket, "socket", ibv.DefaultSocketPath(), "the rnicd whose NICs to list")
	flags.StringVar(&s.addr, "addr", "127.0.0.2", "the in-process NIC's address (its MAC, GUID and GID follow from it)")
}

// localLinkMTU is the link MTU pingpong and perf give their in-process
// NIC on loopback (which allows jumbo frames): path MTU 4096.
const localLinkMTU = 9000

// list returns the devices, the in-process NIC first; a daemon that
// cannot be reached is an error unless the default socket does not exist.
func (s *deviceSources) list(socketGiven bool) ([]deviceEntry, error) {
	addr, err := netip.ParseAddr(s.addr)
	if err != nil {
		return nil, fmt.Errorf("--addr: %w", err)
	}
	local := ibv.Spec{Backend: ibv.BackendLocal, Name: "rnic0"}
	out := []deviceEntry{{spec: local, backend: "in-process", open: func() (ibv.Device, error) { return openLocal(local.Name, addr) }}}
	st, err := client.QueryStat(s.socket)
	switch {
	case err == nil:
		for _, d := range st.Devices {
			spec := ibv.Spec{Backend: ibv.BackendDaemon, Name: d.Name, Socket: s.socket}
			out = append(out, deviceEntry{spec: spec, backend: "rnicd", open: func() (ibv.Device, error) { return ibv.Open(spec) }})
		}
	case socketGiven || !(errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED)):
		// No daemon has ever listened on the default socket, or its
		// socket is stale: there is none to list.
		return out, err
	}
	if passthrough.Built {
		names, err := passthrough.Devices()
		if err != nil {
			return out, err
		}
		for _, n := range names {
			spec := ibv.Spec{Backend: ibv.BackendVerbs, Name: n}
			out = append(out, deviceEntry{spec: spec, backend: "libibverbs", open: func() (ibv.Device, error) { return ibv.Open(spec) }})
		}
	}
	return out, nil
}

// openLocal builds the in-process NIC as the commands do, on a pipe
// instead of a socket: its attributes are the same and nothing is bound.
func openLocal(name string, addr netip.Addr) (ibv.Device, error) {
	a, b := transport.NewPipe()
	n, err := embedded.Open(embedded.UDPConfig{Name: name, Addr: addr, MTU: localLinkMTU, Link: a})
	if err != nil {
		b.Close()
		return nil, err
	}
	return nic.AsIBV(n.Device, nic.IBVOptions{Close: func() error {
		err := n.Close()
		b.Close()
		return err
	}}), nil
}

func runDevices(args []string, stdout, stderr io.Writer) int {
	flags := pflag.NewFlagSet("rnic devices", pflag.ContinueOnError)
	flags.SetOutput(io.Discard)
	var src deviceSources
	src.add(flags)
	flags.Usage = func() {
		fmt.Fprint(flags.Output(), devicesHelp)
		flags.PrintDefaults()
	}
	if err := flags.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			flags.SetOutput(stdout)
			flags.Usage()
			return 0
		}
		fmt.Fprintf(stderr, "rnic %s (rnic help devices)\n", withPrefix("devices: ", err))
		return 2
	}
	if flags.NArg() > 0 {
		fmt.Fprintf(stderr, "rnic devices: unexpected argument %q (rnic help devices)\n", flags.Arg(0))
		return 2
	}
	devs, listErr := src.list(socketChosen(flags))
	fmt.Fprintf(stdout, "    %-30s  %-16s  %s\n", "device", "node GUID", "backend")
	fmt.Fprintf(stdout, "    %-30s  %-16s  %s\n", "------", "---------", "-------")
	status := 0
	for _, e := range devs {
		d, err := e.open()
		if err != nil {
			fmt.Fprintf(stderr, "rnic %s\n", withPrefix("devices: ", err))
			status = 1
			continue
		}
		fmt.Fprintf(stdout, "    %-30s  %016x  %s\n", e.spec, d.Query().NodeGUID, e.backend)
		d.Close()
	}
	if listErr != nil {
		fmt.Fprintf(stderr, "rnic %s\n", withPrefix("devices: ", listErr))
		status = 1
	}
	return status
}

// socketChosen reports whether the user named the daemon (--socket or
// $RNIC_SOCKET), whose absence is then an error, not an empty list.
func socketChosen(flags *pflag.FlagSet) bool {
	return flags.Changed("socket") || os.Getenv(ibv.SocketEnv) != ""
}
