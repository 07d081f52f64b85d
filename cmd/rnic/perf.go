package main

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"

	"github.com/spf13/pflag"

	"github.com/rnic/rnic/cmd/internal/perf"
	"github.com/rnic/rnic/nic/ibv"
)

const perfHelp = `usage: rnic perf [TEST] [flags]                        both sides in this process
       rnic perf [TEST] --serve [--addr IP] [flags]   serve one test, as perftest's server
       rnic perf [TEST] [--addr IP] [flags] SERVER    run a test against SERVER

TEST names the test as perftest's binaries do: write_bw, read_bw,
send_bw, atomic_bw, write_lat, read_lat, send_lat, atomic_lat (an "ib_"
prefix is allowed); it is the same as --op and --mode, which it overrides.
perftest's flags -s -n -q -m -x -F -c -A -d -p mean what they mean there.

Two processes speak perftest's side channel (version "6.06", system data,
MTU, the key messages, the hand shakes, the bw report, "done"), so either
side runs against perftest's ib_write_bw, ib_read_lat, ... on rxe:

  guest:  ib_write_bw -d rxe0 -x 1 -F -s 4096 -n 20
  rnic:   rnic perf write_bw -s 4096 -n 20 --netns N --bridge B --tap T --ip A/24 GUEST

-R connects the QPs with rdma_cm, as perftest's -R: over RoCEv2 the IB
CM's MADs on QP1 (service ID for TCP port -p), over --iwarp MPA on a TCP
connection to port -p. The first connection carries perftest's exchange
as SENDs, the second the test; both sides need the test's flags (it is
perftest's exchange alone: no data check, no raw baseline). perftest on
siw runs only so:

  guest:  ib_send_bw -d siw0 -R -F -s 4096 -n 20
  rnic:   rnic perf send_bw -R --iwarp -s 4096 -n 20 --netns N --bridge B --tap T --ip A/24 GUEST

A server started for a perftest client runs the test of its own flags, as
perftest's server (give it the client's -s and -n); against an rnic client
it needs none: the client tells it the test. Against perftest the data
check and the raw baseline are skipped (perftest's buffers hold no pattern
rnic knows).

perftest on rnic NICs (ib_write_bw, ib_read_lat, ...): --op write, read,
send or atomic; --mode bw or lat. By default the client and the server run
in this process, two NICs on 127.0.0.2 (server) and 127.0.0.3 (client)
over loopback UDP. As with perftest they can run in two processes instead;
the client sends the test's parameters, so the server needs only its
address (--addr alone also means --serve). The side channel is TCP port
18515; the QP keys travel as perftest's key messages.

Semantics are perftest's: bw keeps --tx-depth operations outstanding per
QP and measures from the first post to the last completion (MB = 2^20
bytes); lat does one operation at a time (WRITE and SEND ping-pong, READ
and atomics wait for their completion) and reports the median as
t_typical. --qps spreads the work over that many QP pairs. Every run checks
that the data arrived intact.

The same run measures raw kernel UDP between the same addresses with
datagrams the size of the test's RoCEv2 packets (bw: one sendto per
datagram, as many as rnic sent packets; lat: a ping-pong) and ends with

  raw udp: X MB/sec, rnic/raw = R        (bw)
  raw udp: t_typical X usec, rnic/raw = R (lat)

With --iwarp the NICs are iWARP devices on kernel TCP instead, each QP
pair connected through the iWARP connection manager (MPA Request and
Reply), and the raw figure is kernel TCP's between the same addresses
(bw: the same total bytes, one write per message; lat: a TCP ping-pong of
the same message size):

  raw tcp: X MB/sec, rnic/raw = R
  raw tcp: t_typical X usec, rnic/raw = R

--iwarp works in one process and in two: start the server with --iwarp
too. Its connection manager listens on TCP port 18516 (--iwarp-port), which
it names to the client over the side channel; the keys (STag, address)
travel there as in the RoCEv2 test.

-d/--ib-dev names the device, as perftest's -d does: a plain name is this
process's own NIC, as above (named so in a role of two processes);
NAME@SOCKET is a NIC rnicd serves (NAME@ for the default socket: ` + ibv.SocketRule + `),
verbs:NAME a libibverbs device. Those own their port: ` + deviceLocalFlagsHelp + `
are for this process's NIC only, as is --iwarp; -R runs on the device's
rdma_cm (rnicd's, librdmacm's). The NIC's address is one of the device's GIDs
(--addr picks one), the path MTU defaults to its port's active MTU, and the
side channel runs on the device's own network if it has one (the raw
baseline, the kernel's, is then skipped), else on kernel TCP. Both sides in
one process share the device, their QPs talking through its port.

` + tapModeHelp + ` Each process runs one role, the server (--serve) or
the client (SERVER last), as perftest. Both sides in one process need two
TAPs: --tap twice (the server's, then the client's) with one --ip each. The raw baseline is skipped in the TAP mode.

Progress goes to stderr once a run has taken a few seconds. Exits 1 when
the test fails or data arrived corrupted, 2 on bad usage.

flags:
`

func runPerf(args []string, stdout, stderr io.Writer) int {
	var cfg perf.Config
	fs, f := newPerfFlags(&cfg)
	cmd := toolCommand{name: "perf", stdout: stdout, stderr: stderr}
	if code, ok := cmd.parse(fs, args, func() error { return f.resolve(fs, &cfg) }); !ok {
		return code
	}
	out, code, ok := cmd.captures(f.pcapPath, f.trace)
	if !ok {
		return code
	}
	defer out.close()
	cfg.Pcap, cfg.Trace = out.pcap, out.trace
	cfg.Out, cfg.Progress = stdout, stderr
	ctx, stop := signalContext()
	defer stop()
	if _, err := perf.Run(ctx, cfg); err != nil {
		if code, ok := signalStatus(ctx, stderr, "perf"); ok {
			return code
		}
		fmt.Fprintf(stderr, "rnic %s\n", withPrefix("perf: ", err))
		if errors.Is(err, perf.ErrConfig) {
			return 2
		}
		return 1
	}
	return 0
}

// perfFlags are rnic perf's flags that perf.Config does not hold as they
// are given.
type perfFlags struct {
	op, mode, atomicType, addr, pcapPath, conn string
	trace, rdmaCM                              bool
	gidIndex                                   int
	tf                                         *tapFlags
}

// newPerfFlags defines rnic perf's flags, into cfg where they map one to
// one.
func newPerfFlags(cfg *perf.Config) (*pflag.FlagSet, *perfFlags) {
	fs := pflag.NewFlagSet("rnic perf", pflag.ContinueOnError)
	// pflag prints the usage itself on --help before returning ErrHelp;
	// it is printed once, by runPerf, on stdout.
	fs.SetOutput(io.Discard)
	f := &perfFlags{}
	fs.StringVar(&f.op, "op", "write", "operation: write, read, send or atomic")
	fs.StringVar(&f.mode, "mode", "bw", "bw (bandwidth) or lat (latency)")
	fs.StringVarP(&f.atomicType, "atomic-type", "A", string(perf.FetchAndAdd), "atomic operation: CMP_AND_SWAP or FETCH_AND_ADD")
	fs.IntVarP(&cfg.Size, "size", "s", 0, "message size in bytes (default 65536 for bw, 2 for lat; atomics: 8)")
	fs.IntVarP(&cfg.Iters, "iters", "n", 0, "operations per QP (default 5000 for bw, 1000 for lat)")
	fs.IntVarP(&cfg.QPs, "qps", "q", perf.DefaultQPs, fmt.Sprintf("number of QP pairs, 1..%d, traffic spread over all (--iters is per QP); each side's QPs share one send CQ and one receive CQ, which must fit the device's max_cqe (rnic: 32767): qps × tx-depth, and for SEND qps × rx-depth", perf.MaxQPs))
	fs.IntVarP(&cfg.MTU, "mtu", "m", perf.DefaultMTU, "path MTU: 256, 512, 1024, 2048 or 4096")
	fs.IntVarP(&cfg.TxDepth, "tx-depth", "t", 0, fmt.Sprintf("outstanding send WRs per QP (bw; default %d, or 32766/qps when more QPs would overflow the CQ)", perf.DefaultTxDepth))
	fs.IntVarP(&cfg.RxDepth, "rx-depth", "r", 0, fmt.Sprintf("receives kept posted per QP (send; default %d, or 32766/qps when more QPs would overflow the CQ)", perf.DefaultRxDepth))
	fs.IntVarP(&cfg.CQMod, "cq-mod", "Q", perf.DefaultCQMod, "signal one send WR in this many (bw)")
	fs.IntVar(&cfg.Inflight, "inflight", 0, fmt.Sprintf("most send WRs outstanding over all QPs (bw; default: tx-depth, or more up to %d packets on the wire): the QPs take turns, each within its tx-depth (the NIC's --budget does so for the packets of any program)", perf.InflightPackets))
	fs.IntVar(&cfg.Budget, "budget", 0, "bytes of unacknowledged packets all QPs of this process's NIC keep together (0: a quarter of the socket's receive buffer as the kernel counts it; -1: no budget)")
	fs.BoolVar(&cfg.JSON, "json", false, "print one JSON object instead of the table")
	fs.BoolVar(&cfg.NoRaw, "no-raw", false, "skip the raw UDP (with --iwarp: TCP) measurement")
	fs.BoolVar(&cfg.IWARP, "iwarp", false, "iWARP over TCP instead of RoCEv2 over UDP (server and client alike)")
	fs.IntVar(&cfg.IWARPPort, "iwarp-port", perf.DefaultIWARPPort, "TCP port of an --iwarp server's connection manager (0: any free port)")
	fs.BoolVar(&cfg.Serve, "serve", false, "serve one test (as perftest without a server name)")
	fs.StringVar(&f.addr, "addr", "", "this side's NIC address (server default 127.0.0.2; client: see above)")
	fs.IntVarP(&cfg.Port, "port", "p", perf.DefaultPort, "TCP port of the side channel")
	fs.Uint16Var(&cfg.RDMAPort, "rdma-port", perf.DefaultRDMAPort, "RoCEv2 UDP port (the same on both sides)")
	fs.StringVar(&f.pcapPath, "pcap", "", "write every frame the (client's) NIC sends and receives to this pcap file")
	fs.BoolVar(&f.trace, "trace", false, "print every QP state change and PSN/ACK/NAK decision on stderr")
	fs.IntVarP(&f.gidIndex, "gid-index", "x", 0, "source GID index (default: the index of this side's address)")
	fs.BoolP("cpu-freq-off", "F", false, "accepted for perftest's -F (rnic does not read the CPU frequency)")
	fs.BoolVar(&cfg.MW, "mw", false, "hand the peer Type 2B memory windows' rkeys instead of the MR's: each side binds a window over each QP's memory once connected and the peers trade keys again (rnic perf on both sides; the client must ask, a server's --mw only insists)")
	fs.StringVarP(&f.conn, "connection", "c", "RC", "connection type: RC, or UD (SEND tests)")
	fs.BoolVarP(&f.rdmaCM, "rdma-cm", "R", false, "connect the QPs with rdma_cm, as perftest's -R (RoCEv2)")
	fs.StringVarP(&cfg.IBDev, "ib-dev", "d", "", "device: NAME (this process's NIC), NAME@SOCKET (rnicd), verbs:NAME (libibverbs)")
	f.tf = addTAPFlags(fs, false)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), perfHelp)
		fs.PrintDefaults()
	}
	return fs, f
}

// resolve checks the parsed flags and arguments and completes cfg.
func (f *perfFlags) resolve(fs *pflag.FlagSet, cfg *perf.Config) error {
	if err := checkBounds(fs, perfBounds...); err != nil {
		return err
	}
	if err := checkPathMTU(fs, "mtu"); err != nil {
		return err
	}
	if cfg.IBDev != "" {
		spec, err := deviceFlag(fs, cfg.IBDev)
		if err != nil {
			return err
		}
		if spec.Backend != ibv.BackendLocal && !fs.Changed("mtu") {
			cfg.MTU = 0 // the device's port's active MTU
		}
	}
	if err := f.positional(fs.Args(), cfg); err != nil {
		return err
	}
	if fs.Changed("gid-index") {
		cfg.GIDIndex, cfg.HasGIDIndex = f.gidIndex, true
	}
	if err := f.test(cfg); err != nil {
		return err
	}
	return f.taps(cfg)
}

// positional takes the test's name (if given) and the server to connect
// to (none: serve).
func (f *perfFlags) positional(pos []string, cfg *perf.Config) error {
	if len(pos) > 0 {
		if o, m, ok := perf.ParseTestName(pos[0]); ok {
			f.op, f.mode = string(o), string(m)
			pos = pos[1:]
		} else if looksLikeTestName(pos[0]) {
			// A host name has no underscore: this is a misspelt test.
			return fmt.Errorf("no test %q: %s", pos[0], strings.Join(perfTests, ", "))
		}
	}
	switch len(pos) {
	case 0:
		cfg.Serve = cfg.Serve || f.addr != ""
	case 1:
		if cfg.Serve {
			return fmt.Errorf("--serve and a server to connect to")
		}
		cfg.Server = pos[0]
	default:
		return fmt.Errorf("unexpected argument %q", pos[1])
	}
	return nil
}

// test parses the test's kind: connection type, CM, operation, mode,
// atomic type, and this side's address.
func (f *perfFlags) test(cfg *perf.Config) error {
	switch strings.ToUpper(f.conn) {
	case "RC":
	case "UD":
		cfg.UD = true
	default:
		return fmt.Errorf("-c %q: RC or UD", f.conn)
	}
	cfg.RDMACM = f.rdmaCM
	switch {
	case cfg.IWARPPort < 0 || cfg.IWARPPort > 65535:
		return fmt.Errorf("--iwarp-port %d", cfg.IWARPPort)
	case cfg.IWARPPort == 0:
		cfg.IWARPPort = -1 // perf's "any free port"
	}
	var err error
	if cfg.Op, err = perf.ParseOp(f.op); err != nil {
		return err
	}
	if cfg.Mode, err = perf.ParseMode(f.mode); err != nil {
		return err
	}
	if cfg.Op == perf.OpAtomic {
		if cfg.AtomicType, err = perf.ParseAtomicType(f.atomicType); err != nil {
			return err
		}
	}
	if f.addr != "" {
		if cfg.Addr, err = netip.ParseAddr(f.addr); err != nil {
			return fmt.Errorf("--addr: %w", err)
		}
	}
	return nil
}

// taps takes the --tap flags: the client's TAP, or the server's and the
// client's.
func (f *perfFlags) taps(cfg *perf.Config) error {
	taps, err := f.tf.configs()
	if err != nil {
		return err
	}
	switch len(taps) {
	case 0:
		return nil
	case 1:
		cfg.TAP = &taps[0]
	case 2:
		cfg.ServerTAP, cfg.TAP = &taps[0], &taps[1]
	default:
		return fmt.Errorf("%w: at most two --tap (the server's and the client's)", errTAPFlags)
	}
	return f.tf.tapPathMTU("mtu", &cfg.MTU)
}

// perfBounds are the ranges of perf's integer flags; the device's own
// limits (max_cqe, max_qp_wr, ...) are checked by perf once it is known.
var perfBounds = []bound{
	{"size", 1, 1 << 30},
	{"iters", 1, 1 << 26},
	{"qps", 1, perf.MaxQPs},
	{"tx-depth", 1, 1 << 14},
	{"rx-depth", 1, 1 << 14},
	{"cq-mod", 1, 1 << 14},
	{"inflight", 1, 1 << 30},
	{"budget", -1, 1 << 30},
	{"port", 1, 65535},
	{"iwarp-port", 0, 65535},
	{"gid-index", 0, 255},
}

// perfTests are the test names perf accepts first (perftest's binaries).
var perfTests = []string{"write_bw", "read_bw", "send_bw", "atomic_bw", "write_lat", "read_lat", "send_lat", "atomic_lat"}

// looksLikeTestName: a perftest name has an underscore, which no host name
// (RFC 952/1123) and no address has.
func looksLikeTestName(s string) bool { return strings.Contains(s, "_") }

// withPrefix returns err's message starting with prefix once: the
// packages' errors start with their name already.
func withPrefix(prefix string, err error) string {
	m := err.Error()
	if !strings.HasPrefix(m, prefix) {
		m = prefix + m
	}
	return m
}
