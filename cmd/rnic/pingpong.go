package main

import (
	"errors"
	"fmt"
	"io"
	"net/netip"

	"github.com/spf13/pflag"

	"github.com/rnic/rnic/cmd/internal/pingpong"
	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
)

const pingpongHelp = `usage: rnic pingpong [flags]            start a server and wait for connection
       rnic pingpong [flags] SERVER     connect to the server at SERVER

ibv_rc_pingpong on rnic NICs: an RC QP on each side bounces a SEND of
--size bytes back and forth --iters times, then each side prints, as
ibv_rc_pingpong does:

    local address:  LID 0x0000, QPN 0x......, PSN 0x......, GID ...
    remote address: LID 0x0000, QPN 0x......, PSN 0x......, GID ...
  N bytes in S seconds = R Mbit/sec
  N iters in S seconds = T usec/iter

The side channel is ibv_rc_pingpong's, byte for byte (TCP port 18515). Each
NIC is a kernel UDP socket on its own address (the embedded mode): by
default the server takes 127.0.0.2 and a client of a loopback server the
other of 127.0.0.2/127.0.0.3, so two terminals on one host need no flags
but the server's address; a client of a remote server uses the address the
host reaches it from. The server's side channel listens on its address.

The embedded mode's GID table has one entry, index 0 (::ffff:ADDR): the NIC
has no Ethernet port of its own, hence no link-local GID. Without -g, as
with ibv_rc_pingpong, no GID is sent; RoCEv2 needs one, so rnic then reaches
the peer at the address its side channel connection came from.

` + tapModeHelp + ` Each side's NIC owns a TAP device instead of a kernel
socket, and the side channel runs on the NIC's own TCP: the server listens on every address of its NIC, a client connects from its
address of the server's family (IPv6 works end to end), and --pcap records
every frame on the TAP. The GID table is Linux's: index 0 the link-local
GID of the NIC's MAC (fe80::/64, EUI-64; usable: the NIC answers ND for
it), then the --ip addresses in order, so -g 1 is the first --ip, as on
rxe. All entries are RoCEv2 GIDs (rxe also lists RoCE v1 ones).

-d/--ib-dev names the device, as ibv_rc_pingpong's -d does: a plain name
(default rnic0) is this process's own NIC, as above; NAME@SOCKET is a NIC
rnicd serves (NAME@ for the default socket: ` + ibv.SocketRule + `), verbs:NAME a libibverbs
device. Those own their port: ` + deviceLocalFlagsHelp + `
are for this process's NIC only. The NIC's address is then one of the
device's GIDs (--addr picks one; a server listens on every address), and the
side channel runs on the device's own network if it has one, else on kernel
TCP.

With --ud it is ibv_ud_pingpong instead: a UD QP on each side (Q_Key
0x11111111), every SEND addressed through an address handle, 40 bytes of
GRH space ahead of every receive; --size (default 1024) must fit the port's
active MTU (1024 on an Ethernet MTU of 1500) and --mtu is not used.

Exits 1 when a completion fails ("Failed status ... for wr_id N", as
ibv_rc_pingpong) or --chk finds corrupted data, 2 on bad usage.

flags:
`

func runPingpong(args []string, stdout, stderr io.Writer) int {
	var cfg pingpong.Config
	fs, f := newPingpongFlags(&cfg)
	cmd := toolCommand{name: "pingpong", stdout: stdout, stderr: stderr}
	if code, ok := cmd.parse(fs, args, func() error { return f.resolve(fs, &cfg) }); !ok {
		return code
	}
	if f.addr != "" {
		a, err := netip.ParseAddr(f.addr)
		if err != nil {
			fmt.Fprintf(stderr, "rnic pingpong: --addr: %v\n", err)
			return 2
		}
		cfg.Addr = a
	}
	if err := f.taps(&cfg); err != nil {
		return cmd.usage(err)
	}
	out, code, ok := cmd.captures(f.pcapPath, f.trace)
	if !ok {
		return code
	}
	defer out.close()
	cfg.Pcap, cfg.Trace = out.pcap, out.trace
	cfg.Out, cfg.Err = stdout, stderr
	return pingpongExit(cfg, stderr)
}

// pingpongExit runs the tool and turns its error into the exit status.
func pingpongExit(cfg pingpong.Config, stderr io.Writer) int {
	ctx, stop := signalContext()
	defer stop()
	if _, err := pingpong.Run(ctx, cfg); err != nil {
		if code, ok := signalStatus(ctx, stderr, "pingpong"); ok {
			return code
		}
		var ce *pingpong.CompletionError
		switch {
		case errors.As(err, &ce):
			fmt.Fprintln(stderr, ce.Error()) // ibv_rc_pingpong's own words
		case errors.Is(err, pingpong.ErrConfig):
			fmt.Fprintf(stderr, "rnic %s\n", withPrefix("pingpong: ", err))
			return 2
		default:
			fmt.Fprintf(stderr, "rnic %s\n", withPrefix("pingpong: ", err))
		}
		return 1
	}
	return 0
}

// pingpongFlags are rnic pingpong's flags that pingpong.Config does not
// hold as they are given.
type pingpongFlags struct {
	addr, pcapPath string
	trace          bool
	tf             *tapFlags
}

// newPingpongFlags defines rnic pingpong's flags, into cfg where they map
// one to one.
func newPingpongFlags(cfg *pingpong.Config) (*pflag.FlagSet, *pingpongFlags) {
	fs := pflag.NewFlagSet("rnic pingpong", pflag.ContinueOnError)
	// pflag prints the usage itself on --help before returning ErrHelp;
	// it is printed once, by runPingpong, on stdout.
	fs.SetOutput(io.Discard)
	f := &pingpongFlags{}
	fs.IntVarP(&cfg.Port, "port", "p", pingpong.DefaultPort, "TCP port of the side channel (listen on / connect to)")
	fs.StringVarP(&cfg.IBDev, "ib-dev", "d", "rnic0", "device: NAME (this process's NIC), NAME@SOCKET (rnicd), verbs:NAME (libibverbs)")
	fs.IntVarP(&cfg.IBPort, "ib-port", "i", pingpong.DefaultIBPort, "port of the NIC to use (it has port 1 only)")
	fs.IntVarP(&cfg.Size, "size", "s", pingpong.DefaultSize, "size of message to exchange")
	fs.IntVarP(&cfg.MTU, "mtu", "m", pingpong.DefaultMTU, "path MTU: 256, 512, 1024, 2048 or 4096")
	fs.IntVarP(&cfg.RxDepth, "rx-depth", "r", pingpong.DefaultRxDepth, "number of receives to post at a time")
	fs.IntVarP(&cfg.Iters, "iters", "n", pingpong.DefaultIters, "number of exchanges")
	fs.IntVarP(&cfg.SL, "sl", "l", 0, "service level value")
	fs.BoolVarP(&cfg.Events, "events", "e", false, "sleep on CQ events (default poll)")
	fs.IntVarP(&cfg.GIDIndex, "gid-idx", "g", -1, "local port GID index (embedded mode: 0 is the NIC's address; TAP mode: 0 link-local, 1 the first --ip)")
	fs.BoolVarP(&cfg.Check, "chk", "c", false, "validate received buffers")
	fs.BoolVar(&cfg.UD, "ud", false, "ibv_ud_pingpong: UD QPs (default size 1024)")
	fs.StringVar(&f.addr, "addr", "", "the NIC's own IP address (default: see above)")
	fs.Uint16Var(&cfg.RDMAPort, "rdma-port", pingpong.DefaultRDMAPort, "RoCEv2 UDP port (the same on both sides)")
	fs.StringVar(&f.pcapPath, "pcap", "", "write every frame the NIC sends and receives (TAP mode: every frame on the TAP) to this pcap file")
	fs.BoolVar(&f.trace, "trace", false, "print every QP state change and PSN/ACK/NAK decision on stderr")
	f.tf = addTAPFlags(fs, false)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), pingpongHelp)
		fs.PrintDefaults()
	}
	return fs, f
}

// resolve checks the parsed flags and the argument (the server) and
// completes cfg.
func (f *pingpongFlags) resolve(fs *pflag.FlagSet, cfg *pingpong.Config) error {
	if err := checkBounds(fs, pingpongBounds...); err != nil {
		return err
	}
	if err := checkPathMTU(fs, "mtu"); err != nil {
		return err
	}
	if cfg.UD && !fs.Changed("size") {
		cfg.Size = pingpong.DefaultUDSize
	}
	switch fs.NArg() {
	case 0:
	case 1:
		cfg.Server = fs.Arg(0)
	default:
		return fmt.Errorf("unexpected argument %q", fs.Arg(1))
	}
	_, err := deviceFlag(fs, cfg.IBDev)
	return err
}

// taps takes the --tap flag: one, pingpong runs one side per process.
func (f *pingpongFlags) taps(cfg *pingpong.Config) error {
	taps, err := f.tf.configs()
	if err == nil && len(taps) > 1 {
		err = fmt.Errorf("%w: one --tap: pingpong runs one side per process", errTAPFlags)
	}
	if err == nil && len(taps) == 1 {
		cfg.TAP = &taps[0]
		err = f.tf.tapPathMTU("mtu", &cfg.MTU)
	}
	return err
}

// pingpongBounds are the ranges of pingpong's integer flags: the NIC's
// max_msg_sz, its CQ's max_cqe (the CQ holds rx_depth + 1), the rest
// ibv_rc_pingpong's own.
var pingpongBounds = []bound{
	{"port", 1, 65535},
	{"ib-port", 1, 1},
	{"size", 1, verbs.MaxMsgSize},
	{"rx-depth", 1, int64(nic.DefaultLimits().MaxCQE - 1)},
	{"iters", 1, 1<<31 - 1},
	{"sl", 0, 15},
	{"gid-idx", -1, 255},
}

// deviceLocalFlags are the flags that configure a NIC of this process:
// with a device of another backend, which owns the port, they are errors.
var deviceLocalFlags = []string{"tap", "ip", "mac", "tap-mtu", "tap-offload", "netns", "bridge", "pcap", "trace", "rdma-port"}

// deviceLocalFlagsHelp names them in the commands' help.
const deviceLocalFlagsHelp = "--tap, --ip, --mac, --tap-mtu, --tap-offload,\n--netns, --bridge, --pcap, --trace and --rdma-port"

// deviceFlag parses a -d device string (ibv.ParseSpec) and, for a device
// of another backend, refuses the flags of fs that configure a NIC of this
// process.
func deviceFlag(fs *pflag.FlagSet, dev string) (ibv.Spec, error) {
	spec, err := ibv.ParseSpec(dev)
	if err != nil {
		return spec, fmt.Errorf("-d: %w", err)
	}
	if spec.Backend == ibv.BackendLocal {
		return spec, nil
	}
	for _, name := range deviceLocalFlags {
		if fs.Lookup(name) != nil && fs.Changed(name) {
			return spec, fmt.Errorf("--%s is for a NIC of this process, not device %s, whose port the %s backend owns",
				name, spec, spec.Backend)
		}
	}
	return spec, nil
}
