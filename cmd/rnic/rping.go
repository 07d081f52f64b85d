package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"

	"github.com/spf13/pflag"

	"github.com/rnic/rnic/cmd/internal/rping"
	"github.com/rnic/rnic/nic/ibv"
)

const rpingHelp = `usage: rnic rping -s [-vVd] [-S size] [-C count] [-a addr] [-p port] [--iwarp] [--ib-dev DEV]
       rnic rping -c [-vVd] [-S size] [-C count] [-I addr] -a addr [-p port] [--iwarp] [--ib-dev DEV]

librdmacm's rping on an rnic NIC: the client SENDs the address, rkey and
size of its ping buffer, the server RDMA READs it and says go ahead, the
client SENDs the address of a sink buffer, the server RDMA WRITEs the data
back and says go ahead; -V compares what came back. The payload, the
control messages and the output are rping's:

    ping data: rdma-ping-0: ABCDEFGHIJKLMNOPQRSTUVWXYZ[\]^_` + "`" + `abcdefghijklmnopqr

Nothing is printed on success without -v but the DISCONNECT event (on
stderr, as rping). The server serves one client and ignores -C.

By default it runs over RoCEv2 and connects as rdma_cm does over Linux
rxe: the IB CM's REQ, REP and RTU on QP1 (rdma_cm's header, service ID
0x106 << 16 | port), DREQ and DREP at the end, so it interoperates with
rping on rxe. In the embedded mode the NIC is a kernel UDP socket on port
4791 of its own address (no root): the server's is -a, the client's -I
(or the kernel's source address toward the server); --pcap records its
frames.

--iwarp runs it over iWARP: the connection is TCP and MPA as Linux iw_cm
and siw make it (MPA revision 2, IRD = ORD = 1, no RTR, CRCs when the peer
asks or with --mpa-crc), so it interoperates with rping on siw. In the
embedded mode the NIC's streams are kernel TCP (no root) from its own
address, as over RoCEv2: the server's is -a, the client's -I (or the
kernel's source address toward the server).

` + tapModeHelp + ` Both sides run on the NIC on the TAP from
its address (RoCEv2 on its engine, iWARP on its own TCP), and --pcap
records every frame on the TAP.

--ib-dev names the RDMA device (rping's -d is its debug flag, so the
device has no short flag): NAME (default rnic0) is the NIC this process
builds, as above, named NAME; NAME@SOCKET is a NIC served by rnicd, and
verbs:NAME a libibverbs device (rxe0, mlx5_0). Over such a device rping
runs on RoCEv2 through the device's own rdma_cm, which picks the source
address (-I, if given, must be one of the device's); --iwarp, --tap,
--pcap and --trace are this process's NIC's.

Exits 1 when the run fails (messages on stderr, as rping's), 2 on bad usage.

flags:
`

func runRping(args []string, stdout, stderr io.Writer) int {
	var cfg rping.Config
	fs, f := newRpingFlags(&cfg)
	cmd := toolCommand{name: "rping", stdout: stdout, stderr: stderr}
	if code, ok := cmd.parse(fs, args, func() error { return f.resolve(fs, &cfg) }); !ok {
		return code
	}
	out, code, ok := cmd.captures(f.pcapPath, f.trace)
	if !ok {
		return code
	}
	defer out.close()
	cfg.Pcap, cfg.Trace = out.pcap, out.trace
	cfg.Out, cfg.Err = stdout, stderr
	ctx, stop := signalContext()
	defer stop()
	if err := rping.Run(ctx, cfg); err != nil {
		if code, ok := signalStatus(ctx, stderr, "rping"); ok {
			return code
		}
		if errors.Is(err, rping.ErrConfig) {
			return cmd.usage(err)
		}
		if !errors.Is(err, rping.ErrMismatch) { // already said
			fmt.Fprintf(stderr, "rnic %s\n", withPrefix("rping: ", err))
		}
		return 1
	}
	return 0
}

// rpingFlags are rnic rping's flags that rping.Config does not hold as
// they are given.
type rpingFlags struct {
	server, client, trace         bool
	addr, source, pcapPath, ibDev string
	port                          uint16
	tf                            *tapFlags
}

// newRpingFlags defines rnic rping's flags, into cfg where they map one to
// one.
func newRpingFlags(cfg *rping.Config) (*pflag.FlagSet, *rpingFlags) {
	fs := pflag.NewFlagSet("rnic rping", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := &rpingFlags{}
	fs.BoolVarP(&f.server, "server", "s", false, "server side")
	fs.BoolVarP(&f.client, "client", "c", false, "client side")
	fs.StringVarP(&f.addr, "addr", "a", "", "server: the address to listen on (default: every address); client: the server's address")
	fs.StringVarP(&f.source, "source", "I", "", "client: the source address to bind to")
	fs.Uint16VarP(&f.port, "port", "p", rping.DefaultPort, "port")
	fs.IntVarP(&cfg.Size, "size", "S", rping.DefaultSize, fmt.Sprintf("ping data size (%d..%d)", rping.MinSize, rping.MaxSize))
	fs.IntVarP(&cfg.Count, "count", "C", 0, "ping count times (0: until interrupted)")
	fs.BoolVarP(&cfg.Verbose, "verbose", "v", false, "display ping data to stdout")
	fs.BoolVarP(&cfg.Validate, "validate", "V", false, "validate ping data")
	fs.BoolVarP(&cfg.Debug, "debug", "d", false, "debug printfs")
	fs.BoolVar(&cfg.IWARP, "iwarp", false, "run over iWARP (TCP + MPA), as rping on siw")
	fs.BoolVar(&cfg.MPACRC, "mpa-crc", false, "iWARP: ask the peer for MPA CRCs (siw's mpa_crc_required)")
	fs.StringVar(&f.pcapPath, "pcap", "", "write the frames to this pcap file (TAP mode: every frame on the TAP; embedded: the NIC's RoCEv2 frames, or the iWARP TCP connection)")
	fs.BoolVar(&f.trace, "trace", false, "print the engine's connection and QP trace on stderr")
	fs.StringVar(&f.ibDev, "ib-dev", "rnic0", "the RDMA device: NAME (this process's NIC), NAME@SOCKET (rnicd) or verbs:NAME (libibverbs)")
	f.tf = addTAPFlags(fs, false)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), rpingHelp)
		fs.PrintDefaults()
	}
	return fs, f
}

// resolve checks the parsed flags and completes cfg.
func (f *rpingFlags) resolve(fs *pflag.FlagSet, cfg *rping.Config) error {
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	// rping takes the last of -s and -c; both are more likely a mistake.
	switch {
	case f.server && f.client:
		return fmt.Errorf("give -s or -c, not both")
	case !f.server && !f.client:
		return fmt.Errorf("give -s (server) or -c (client)")
	}
	cfg.Server, cfg.Port = f.server, f.port
	var err error
	if cfg.Addr, err = parseHost(f.addr); err != nil {
		return fmt.Errorf("-a %q: %v", f.addr, err)
	}
	if cfg.Source, err = parseHost(f.source); err != nil {
		return fmt.Errorf("-I %q: %v", f.source, err)
	}
	if cfg.Device, err = ibv.ParseSpec(f.ibDev); err != nil {
		return fmt.Errorf("--ib-dev: %v", err)
	}
	taps, err := f.tf.configs()
	if err == nil && len(taps) > 1 {
		err = fmt.Errorf("%w: one --tap: rping runs one side per process", errTAPFlags)
	}
	if err != nil {
		return err
	}
	if len(taps) == 1 {
		cfg.TAP = &taps[0]
	}
	return nil
}

// parseHost parses an address or resolves a host name, as rping's
// getaddrinfo (the empty string is the zero Addr).
func parseHost(s string) (netip.Addr, error) {
	if s == "" {
		return netip.Addr{}, nil
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap(), nil
	}
	ips, err := net.LookupIP(s)
	if err != nil || len(ips) == 0 {
		return netip.Addr{}, fmt.Errorf("invalid hostname or IP address")
	}
	a, _ := netip.AddrFromSlice(ips[0])
	return a.Unmap(), nil
}
