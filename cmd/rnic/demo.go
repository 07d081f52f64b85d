package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"time"

	"github.com/spf13/pflag"

	"github.com/rnic/rnic/cmd/internal/demo"
	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/tapnic"
	"github.com/rnic/rnic/roce/wire"
	"github.com/rnic/rnic/transport"
	"github.com/rnic/rnic/transport/pcap"
	"github.com/rnic/rnic/transport/udp"
)

const demoHelp = `usage: rnic demo [flags]

Two rnic NICs on this host talk RoCEv2 over loopback UDP (no root, no
hardware): they connect RC and UD queue pairs and perform SEND, SEND with
immediate, RDMA WRITE, WRITE with immediate, RDMA READ, CmpSwap, FetchAdd, a
UD SEND, and one error (a WRITE with a bad rkey). Each step is explained with
the frames on the wire and the completions it produced, and checked against
what the spec says. Every frame is written to a capture for Wireshark.

With --iwarp the two NICs are iWARP devices on kernel TCP instead: rnic1
listens on --port (default 18515), rnic0 connects through the iWARP
connection manager (MPA Request and Reply with IRD/ORD, then the RTR), and
they perform SEND, RDMA WRITE, RDMA READ, CmpSwap, FetchAdd (RFC 7306), SEND
with invalidate, and one error (an RDMA READ with a bad STag, answered by a
Terminate). The capture holds the TCP conversation from SYN to FIN, which
Wireshark's MPA heuristic decodes.

With --ladder FILE.svg|FILE.html the capture is then drawn as a ladder
diagram (rnic help ladder), with what a capture cannot show marked between
the frames, from both RoCE engines' traces: a timer expiry (a local ACK
timeout, in the row before the frames it makes rnic resend; retry_cnt
exhausted) and an RNR wait (an RNR NAK sent, and waited on before the
resend). A demo on an idle host has none; they appear when a frame is lost
or late. With --iwarp there are none to mark: TCP, below the iWARP
engine, resends lost segments, and RDMAP has no RNR NAK.

` + tapModeHelp + ` Here (--tap A --tap B --ip CIDR_A --ip CIDR_B, --mac
twice optional) rnic0 and rnic1 each own a TAP device, which must share an
Ethernet: put them on one bridge, or --bridge BR enslaves them; every step,
and with --iwarp the TCP connection, crosses that wire. --pcap then records
every frame on rnic0's TAP.

With -d/--ib-dev DEVICE the RoCEv2 steps run with both sides on that one
device, two sets of QPs talking to each other through its port: a plain
name is a NIC of this process on --addr-a (port --port), NAME@SOCKET a NIC
rnicd serves (NAME@ for the default socket: ` + ibv.SocketRule + `), verbs:NAME a libibverbs
device (--addr-a, if given, picks its address). The frames are then the
device's own: the narration has no "wire:" lines and there is no capture.

Exits 0 only if every step behaved as specified.

flags:
`

// demoFlags are `rnic demo`'s flags.
type demoFlags struct {
	fs                         *pflag.FlagSet
	addrA, addrB, pcap, ladder *string
	ibDev                      *string
	ipv6, iwarp                *bool
	port                       *uint16
	timeout                    *time.Duration
	tap                        *tapFlags
}

func newDemoFlags() *demoFlags {
	fs := pflag.NewFlagSet("rnic demo", pflag.ContinueOnError)
	// pflag prints the usage itself on --help before returning ErrHelp;
	// it is printed once, below, on stdout, and errors once on stderr.
	fs.SetOutput(io.Discard)
	f := &demoFlags{fs: fs,
		addrA:   fs.String("addr-a", "127.0.0.2", "rnic0's address (an address of this host)"),
		addrB:   fs.String("addr-b", "127.0.0.3", "rnic1's address"),
		ipv6:    fs.Bool("ipv6", false, "use ::1 for both NICs (on ports --port and --port+1)"),
		port:    fs.Uint16("port", wire.UDPPort, "RoCEv2 UDP port"),
		pcap:    fs.String("pcap", "demo.pcap", "capture file (empty: none)"),
		ladder:  fs.String("ladder", "", "then draw the capture as a ladder diagram, FILE.svg or FILE.html, with the engines' timer expiries and RNR waits marked"),
		timeout: fs.Duration("timeout", 2*time.Second, "time allowed for each step"),
		iwarp:   fs.Bool("iwarp", false, "iWARP over kernel TCP instead of RoCEv2 over UDP"),
		ibDev:   fs.StringP("ib-dev", "d", "", "both sides on one device: NAME (this process's NIC), NAME@SOCKET (rnicd), verbs:NAME (libibverbs)"),
		tap:     addTAPFlags(fs, true)}
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), demoHelp)
		fs.PrintDefaults()
	}
	return f
}

// taps checks the flags past parsing and returns the TAP configs (none or
// two).
func (f *demoFlags) taps() ([]tapnic.Config, error) {
	taps, err := f.tap.configs()
	if err == nil && *f.timeout <= 0 {
		err = fmt.Errorf("--timeout %v: must be positive", *f.timeout)
	}
	if err == nil && len(taps) != 0 && len(taps) != 2 {
		err = fmt.Errorf("%w: the demo needs two NICs: --tap twice (rnic0's, then rnic1's), with one --ip each", errTAPFlags)
	}
	return taps, err
}

func runDemo(args []string, stdout, stderr io.Writer) (status int) {
	f := newDemoFlags()
	fs := f.fs
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fs.SetOutput(stdout)
			fs.Usage()
			return 0
		}
		fmt.Fprintf(stderr, "rnic %s (rnic help demo)\n", withPrefix("demo: ", err))
		return 2
	}
	var marks *demoMarks // the engines' timer expiries and RNR waits, for --ladder
	if *f.ladder != "" {
		if err := ladderOutput(*f.ladder); err != nil {
			fmt.Fprintf(stderr, "rnic demo: --ladder: %v (rnic help demo)\n", err)
			return 2
		}
		marks = &demoMarks{}
		defer func() { status = demoLadder(status, *f.ladder, *f.pcap, *f.port, marks, stderr) }()
	}
	taps, err := f.taps()
	if err != nil {
		fmt.Fprintf(stderr, "rnic %s (rnic help demo)\n", withPrefix("demo: ", err))
		return 2
	}
	ctx, stop := signalContext()
	defer stop()
	switch {
	case fs.Changed("ib-dev"):
		return runDemoDevice(ctx, fs, *f.ibDev, *f.addrA, *f.port, *f.timeout, stdout, stderr)
	case len(taps) == 2:
		return runDemoTAP(ctx, &taps[0], &taps[1], *f.iwarp, *f.pcap, *f.timeout, marks, stdout, stderr)
	case *f.iwarp:
		p := *f.port
		if !fs.Changed("port") {
			p = iwarpDemoPort
		}
		return runDemoIWARP(ctx, *f.addrA, *f.addrB, *f.ipv6, p, *f.pcap, *f.timeout, stdout, stderr)
	}
	return runDemoLoopback(ctx, f, marks, stdout, stderr)
}

// demoAddrs parses the two NICs' addresses, or with ipv6 gives ::1 twice.
func demoAddrs(addrA, addrB string, ipv6 bool) (a, b netip.Addr, err error) {
	if ipv6 {
		return netip.IPv6Loopback(), netip.IPv6Loopback(), nil
	}
	if a, err = netip.ParseAddr(addrA); err == nil {
		b, err = netip.ParseAddr(addrB)
	}
	return a, b, err
}

// runDemoLoopback runs the RoCEv2 demo between two NICs on kernel UDP
// sockets.
func runDemoLoopback(ctx context.Context, f *demoFlags, marks *demoMarks, stdout, stderr io.Writer) int {
	port := *f.port
	cfg := demo.Config{Out: stdout, Timeout: *f.timeout, PortA: port, PortB: port}
	if marks != nil {
		cfg.TraceEvents = marks.event
	}
	if *f.ipv6 {
		cfg.PortB = port + 1
	}
	var err error
	if cfg.AddrA, cfg.AddrB, err = demoAddrs(*f.addrA, *f.addrB, *f.ipv6); err != nil {
		fmt.Fprintf(stderr, "rnic %s\n", withPrefix("demo: ", err))
		return 2
	}
	if code := openDemoLinks(&cfg, stderr); code != 0 {
		return code
	}
	var pw *pcap.Writer
	if *f.pcap != "" {
		if pw, err = pcap.Create(*f.pcap); err != nil {
			cfg.LinkA.Close()
			cfg.LinkB.Close()
			fmt.Fprintf(stderr, "rnic %s\n", withPrefix("demo: ", err))
			return 2
		}
		cfg.Pcap = pw
	}
	fmt.Fprintf(stdout, "rnic demo: two NICs over loopback UDP (port %d), kernel sockets, no root\n", port)
	runErr := demo.Run(ctx, cfg)
	if pw != nil {
		if err := pw.Close(); err != nil && runErr == nil {
			runErr = err
		}
		tellDemoCapture(stdout, *f.pcap, pw.Frames(), cfg.PortA, cfg.PortB)
	}
	return demoStatus(ctx, runErr, stderr)
}

// openDemoLinks opens both NICs' kernel UDP links into cfg (rnic0's behind
// demoFault, if a test set it); non-zero is the exit status of a failure.
func openDemoLinks(cfg *demo.Config, stderr io.Writer) int {
	reseal := func(b []byte) {
		var f wire.Frame
		if f.Decode(b, 0) == nil {
			f.Seal()
		}
	}
	epA, err := udp.Open(udp.Config{Addr: cfg.AddrA, Port: cfg.PortA, Reseal: reseal})
	if err != nil {
		fmt.Fprintf(stderr, "rnic demo: rnic0: %v\n", err)
		return 2
	}
	epB, err := udp.Open(udp.Config{Addr: cfg.AddrB, Port: cfg.PortB, Reseal: reseal})
	if err != nil {
		epA.Close()
		fmt.Fprintf(stderr, "rnic demo: rnic1: %v\n", err)
		return 2
	}
	cfg.LinkA, cfg.LinkB, cfg.MACA, cfg.MACB = epA, epB, epA.MAC(), epB.MAC()
	if demoFault != nil {
		cfg.LinkA = demoFault(cfg.LinkA)
	}
	return 0
}

// tellDemoCapture tells where the RoCEv2 demo's capture is and how to
// read it.
func tellDemoCapture(stdout io.Writer, path string, frames int, portA, portB uint16) {
	tsharkPorts, decodePorts := "", ""
	if portA != wire.UDPPort || portB != wire.UDPPort {
		tsharkPorts = fmt.Sprintf(" -d udp.port==%d,infiniband -d udp.port==%d,infiniband", portA, portB)
		decodePorts = fmt.Sprintf(" --port %d,%d", portA, portB)
	}
	fmt.Fprintf(stdout, "\ncapture: %s (%d frames). View it with:\n  tshark -r %s%s -V -Y infiniband\n  wireshark %s\nand check every ICRC (which Wireshark does not) with:\n  %s decode%s %s\n",
		path, frames, path, tsharkPorts, path, self(), decodePorts, path)
}

// demoStatus is the exit status of a demo that ended with runErr: 0, the
// signal's, or 1.
func demoStatus(ctx context.Context, runErr error, stderr io.Writer) int {
	if runErr == nil {
		return 0
	}
	if code, ok := signalStatus(ctx, stderr, "demo"); ok {
		return code
	}
	fmt.Fprintf(stderr, "rnic %s\n", withPrefix("demo: ", runErr))
	return 1
}

// demoFault, set only by tests, wraps rnic0's link (below its capture) in
// the loopback RoCEv2 demo: a test loses frames with it to make the engines
// retransmit.
var demoFault func(transport.Endpoint) transport.Endpoint

// iwarpDemoPort is the TCP port of `rnic demo --iwarp`: perftest's default
// port, on which Wireshark has no dissector that would keep its MPA
// heuristic from running (4420, the NVMe/TCP port, has one).
const iwarpDemoPort = 18515

func runDemoIWARP(ctx context.Context, addrA, addrB string, ipv6 bool, port uint16, pcapPath string, timeout time.Duration, stdout, stderr io.Writer) int {
	cfg := demo.IWARPConfig{Out: stdout, Timeout: timeout, Port: port}
	var err error
	if cfg.AddrA, cfg.AddrB, err = demoAddrs(addrA, addrB, ipv6); err != nil {
		fmt.Fprintf(stderr, "rnic %s\n", withPrefix("demo: ", err))
		return 2
	}
	var pw *pcap.Writer
	if pcapPath != "" {
		if pw, err = pcap.Create(pcapPath); err != nil {
			fmt.Fprintf(stderr, "rnic %s\n", withPrefix("demo: ", err))
			return 2
		}
		cfg.Pcap = pw
	}
	fmt.Fprintf(stdout, "rnic demo --iwarp: two iWARP NICs over loopback TCP (port %d), kernel sockets, no root\n", port)
	runErr := demo.RunIWARP(ctx, cfg)
	if pw != nil {
		if err := pw.Close(); err != nil && runErr == nil {
			runErr = err
		}
		fmt.Fprintf(stdout, "\ncapture: %s (%d frames, the TCP conversation from SYN to FIN). View it with:\n  tshark -r %s -Y iwarp_ddp_rdmap\n  tshark -r %s -V -Y iwarp_mpa\n  wireshark %s\n"+
			"(Wireshark finds MPA by a TCP heuristic; on a port another dissector claims, add -o tcp.try_heuristic_first:TRUE.)\n",
			pcapPath, pw.Frames(), pcapPath, pcapPath, pcapPath)
	}
	return demoStatus(ctx, runErr, stderr)
}

// runDemoTAP runs the demo (RoCE, or with iwarp the iWARP one) between two
// TAP-mode NICs; marks, if set, collects the RoCE engines' timer expiries
// and RNR waits.
func runDemoTAP(ctx context.Context, a, b *tapnic.Config, iwarp bool, pcapPath string, timeout time.Duration, marks *demoMarks, stdout, stderr io.Writer) int {
	var pw *pcap.Writer
	if pcapPath != "" {
		var err error
		if pw, err = pcap.Create(pcapPath); err != nil {
			fmt.Fprintf(stderr, "rnic %s\n", withPrefix("demo: ", err))
			return 2
		}
	}
	var runErr error
	if iwarp {
		fmt.Fprintf(stdout, "rnic demo --iwarp: two iWARP NICs on TAPs %s and %s, TCP on their own stacks\n", a.TAP, b.TAP)
		runErr = demo.RunIWARP(ctx, demo.IWARPConfig{Out: stdout, Timeout: timeout, Port: iwarpDemoPort, Pcap: pw, TAPA: a, TAPB: b})
	} else {
		fmt.Fprintf(stdout, "rnic demo: two NICs on TAPs %s and %s (RoCEv2 on a real Ethernet)\n", a.TAP, b.TAP)
		cfg := demo.Config{Out: stdout, Timeout: timeout, Pcap: pw, TAPA: a, TAPB: b}
		if marks != nil {
			cfg.TraceEvents = marks.event
		}
		runErr = demo.Run(ctx, cfg)
	}
	if pw != nil {
		if err := pw.Close(); err != nil && runErr == nil {
			runErr = err
		}
		fmt.Fprintf(stdout, "\ncapture: %s (%d frames on %s's TAP). View it with:\n  tshark -r %s\n  wireshark %s\n",
			pcapPath, pw.Frames(), "rnic0", pcapPath, pcapPath)
	}
	if runErr != nil {
		if code, ok := signalStatus(ctx, stderr, "demo"); ok {
			return code
		}
		fmt.Fprintf(stderr, "rnic %s\n", withPrefix("demo: ", runErr))
		if errors.Is(runErr, demo.ErrConfig) {
			return 2
		}
		return 1
	}
	return 0
}

// runDemoDevice runs the RoCEv2 demo with both sides on one device: a NIC
// of this process on --addr-a, or another backend's.
func runDemoDevice(ctx context.Context, fs *pflag.FlagSet, dev, addrA string, port uint16, timeout time.Duration, stdout, stderr io.Writer) int {
	usage := func(err error) int {
		fmt.Fprintf(stderr, "rnic %s (rnic help demo)\n", withPrefix("demo: ", err))
		return 2
	}
	spec, err := deviceFlag(fs, dev)
	if err != nil {
		return usage(err)
	}
	// --ladder too: there is no capture to draw (and a demo.pcap of an
	// earlier run must not be drawn as this one's).
	for _, name := range []string{"iwarp", "addr-b", "ipv6", "pcap", "ladder", "tap", "ip", "mac"} {
		if fs.Changed(name) {
			return usage(fmt.Errorf("--%s: not with -d, which puts both sides of the RoCEv2 demo on one device, whose frames are its own", name))
		}
	}
	var a netip.Addr
	if spec.Backend == ibv.BackendLocal || fs.Changed("addr-a") {
		if a, err = netip.ParseAddr(addrA); err != nil {
			return usage(fmt.Errorf("--addr-a: %w", err))
		}
	}
	var d ibv.Device
	if spec.Backend == ibv.BackendLocal {
		n, err := embedded.Open(embedded.UDPConfig{Name: spec.Name, Addr: a, Port: port, MTU: 1500})
		if err != nil {
			fmt.Fprintf(stderr, "rnic demo: %s: %v\n", spec, err)
			return 1
		}
		d = nic.AsIBV(n.Device, nic.IBVOptions{Close: n.Close})
		fmt.Fprintf(stdout, "rnic demo: both sides on %s, a NIC on %v over loopback UDP (port %d)\n", spec, a, port)
	} else {
		if d, err = ibv.Open(spec); err != nil {
			fmt.Fprintf(stderr, "rnic %s\n", withPrefix("demo: ", err))
			return 1
		}
		fmt.Fprintf(stdout, "rnic demo: both sides on %s (%s)\n", spec, spec.Backend)
	}
	if err := demo.Run(ctx, demo.Config{Device: d, AddrA: a, Out: stdout, Timeout: timeout}); err != nil {
		if code, ok := signalStatus(ctx, stderr, "demo"); ok {
			return code
		}
		fmt.Fprintf(stderr, "rnic %s\n", withPrefix("demo: ", err))
		if errors.Is(err, demo.ErrConfig) {
			return 2
		}
		return 1
	}
	return 0
}
