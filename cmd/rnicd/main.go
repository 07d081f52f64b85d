// Command rnicd runs rnic NICs until SIGINT or SIGTERM and serves them to
// local processes over a Unix socket (nic/rnicd). A NIC owns a TAP device
// as hardware owns its port (it answers ARP, ND and ping there and speaks
// RoCEv2 and iWARP), or, with --udp, lives on kernel UDP sockets as the
// embedded mode does (no root).
package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/rnic/rnic/cmd/internal/version"
	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/server"
	"github.com/rnic/rnic/nic/tapnic"
	"github.com/rnic/rnic/transport/pcap"
)

const help = `usage: rnicd --tap NAME --ip CIDR [--ip6 CIDR] [--mac MAC] [--mtu N]
             [--pcap FILE] [--name rnic0] [--netns NS] [--bridge BR]
             [--transport roce|iwarp]
             [--device 'name=rnic1,tap=t1,ip=CIDR,...']...
       rnicd --udp ADDR[:PORT] [--mtu N] [--pcap FILE] [--name rnic0]
             [--device 'name=rnic1,udp=ADDR[:PORT],...']...
       rnicd --tcp ADDR [--pcap FILE] [--name rnic0]
             [--device 'name=rnic1,tcp=ADDR,...']...
       [--socket PATH] [--max-clients N] [--max-clients-per-uid N]
       [--max-qps N] [--max-mrs N] [--max-mr-bytes N]
       [--max-ring-bytes N] [--max-objects N] [--max-mrs-per-uid N]
       [--max-mapped-bytes-per-uid N] [--max-mappings N] [--max-mapped-bytes N]
       [--max-queue-bytes-per-uid N] [--max-queue-bytes N]
       [--tenant 'name=NAME,nics=rnic1+rnic2,uid=N,...']...
       rnicd --version

Runs software RDMA NICs until SIGINT or SIGTERM and serves them to local
processes. A TAP-mode NIC owns a TAP device (a real Ethernet port: ARP,
IPv6 ND, ping, RoCEv2 on UDP 4791, iWARP over its own TCP); a TAP that does
not exist is created and removed on exit, an existing one is attached to
and left in place. The NIC's addresses are its own, not the kernel's: put
the TAP on a bridge (--bridge) or give the kernel side an address of its
own to reach it. A UDP NIC (--udp) is the embedded mode's: RoCEv2 over
kernel UDP sockets on an address of this host; it needs no privilege. A
TCP NIC (--tcp) is an iWARP one (transport iWARP, node type RNIC): RDMAP,
DDP and MPA over kernel TCP on an address of this host, connected only
through rdma_cm; it needs no privilege either. A TAP-mode NIC is a RoCEv2
one unless --transport iwarp (transport=iwarp) makes it an iWARP one on its
own TCP: on a bridge it meets Linux siw.

The flags describe the first NIC; every --device adds one more, with the
same keys as the flags (name, tap, udp, tcp, transport, ip, ip6, mac, mtu,
pcap, netns, bridge; tap and ip or ip6, or udp, or tcp, required; names default to rnic0, rnic1,
... in order). Once a NIC is up rnicd prints

    rnic0: tap t0 mac 02:00:0a:4d:00:32 ip 10.77.0.50/24 mtu 1500 ready
    rnic0: iwarp tap t0 mac 02:00:0a:4d:00:32 ip 10.77.0.50/24 mtu 1500 ready
    rnic0: udp 127.0.0.2:4791 mtu 1500 ready
    rnic0: iwarp tcp 127.0.0.2 ready

then, serving them on the control socket,

    rnicd: serving rnic0 on /run/rnic/rnicd.sock

Programs reach a NIC there by the device string NAME@SOCKET (rnic0@ for the
default socket). Each client (connection) is limited by the --max-* flags,
and so are the clients served at once (--max-clients, and per user
--max-clients-per-uid: one more is told so and disconnected); clients coming
and going, and their errors, are logged on stderr. A client talks only to a
daemon running as its own user or as root (it checks SO_PEERCRED first).
The socket defaults to ` + ibv.SocketRule + `,
so an unprivileged rnicd and its clients meet without --socket. Started by
systemd through a socket unit (rnicd.socket: socket activation, LISTEN_FDS),
rnicd serves on the socket it is handed instead, with the mode the unit
gives it, and leaves it in place on exit for systemd to listen on.

Tenants (--tenant, repeatable) are more sockets, each serving its own NICs
to its own clients: a client of a tenant's socket lists, opens and sees
only the tenant's NICs, clients and counters, within the tenant's limits;
the daemon's socket serves the NICs no tenant has. Once serving, rnicd
prints a line per tenant:

    rnicd: tenant pod-a: serving rnic1 on /run/rnic/tenants/pod-a/rnicd.sock

TAP mode needs CAP_NET_ADMIN. Exits 0 after a signal, 1 when a NIC or the
socket fails to open (whatever was open is closed), 2 on bad usage.

flags:
`

func main() {
	// Signals are caught before any NIC opens, so one arriving mid-start
	// still closes everything (and flushes the pcaps) instead of killing
	// the process.
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	if !noShortSlices() {
		shortSlices() // slice.go
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, stop))
}

// run opens every NIC args describe, reports each ready, serves them on
// the control socket, waits for stop, closes everything and returns the
// exit status.
func run(args []string, stdout, stderr io.Writer, stop <-chan os.Signal) int {
	if len(args) == 1 && args[0] == "--version" {
		fmt.Fprintln(stdout, version.Line("rnicd"))
		return 0
	}
	opts, err := parseArgs(args)
	if err != nil {
		if errors.Is(err, errHelp) {
			printHelp(stdout)
			return 0
		}
		fmt.Fprintf(stderr, "%s (rnicd --help)\n", prefixed(err))
		return 2
	}
	inherited, err := activationListener()
	if err != nil {
		fmt.Fprintln(stderr, prefixed(err))
		return 1
	}
	d := &daemon{served: make(chan error, 1+len(opts.tenants)), inherited: inherited}
	fail := func(err error) int {
		fmt.Fprintln(stderr, prefixed(err))
		if cerr := d.closeAll(); cerr != nil {
			fmt.Fprintln(stderr, prefixed(cerr))
		}
		return 1
	}
	for _, s := range opts.devices {
		dev, err := openDevice(s)
		if err != nil {
			return fail(err)
		}
		d.running = append(d.running, dev)
		fmt.Fprintln(stdout, dev.readyLine())
		if w := dev.loopbackWarning(); w != "" {
			fmt.Fprintln(stderr, w)
		}
	}
	if opts.socket != "" || d.inherited != nil || len(opts.tenants) > 0 {
		if err := d.serve(opts, stdout, stderr); err != nil {
			return fail(err)
		}
	}

	var status int
	select {
	case <-stop:
	case err := <-d.served:
		// A listener failed; its clients can be served no more.
		fmt.Fprintln(stderr, prefixed(err))
		d.served <- err // closeAll waits for it
		status = 1
	}
	if err := d.closeAll(); err != nil {
		fmt.Fprintln(stderr, prefixed(err))
		status = 1
	}
	fmt.Fprintln(stdout, "rnicd: stopped")
	return status
}

// daemon is what run opened: the NICs, the control socket systemd
// passed (socket activation), if any, and the server of them once it
// serves (each Serve's end on served; serving counts them).
type daemon struct {
	running   []*device
	inherited *net.UnixListener
	srv       *server.Server
	served    chan error
	serving   int
}

// serve starts serving the running NICs: the tenants' on their sockets,
// the others on opts.socket.
func (d *daemon) serve(opts *options, stdout, stderr io.Writer) error {
	devs := make([]ibv.Device, len(d.running))
	var names []string // the host's
	tenantOf := map[string]bool{}
	var tenants []server.TenantConfig
	for _, t := range opts.tenants {
		tenants = append(tenants, t.TenantConfig)
		for _, n := range t.Devices {
			tenantOf[n] = true
		}
	}
	for i, dev := range d.running {
		devs[i] = dev.dev
		if !tenantOf[dev.spec.Name] {
			names = append(names, dev.spec.Name)
		}
	}
	var logMu sync.Mutex // sessions log from their own goroutines
	logf := func(format string, args ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		fmt.Fprintf(stderr, "rnicd: "+format+"\n", args...)
	}
	srv, err := server.New(server.Config{Devices: devs, Limits: opts.limits, Logf: logf, HostPorts: d.hostPorts(),
		Tenants: tenants})
	if err != nil {
		return err
	}
	d.srv = srv
	if opts.socket != "" || d.inherited != nil {
		l, where, err := d.listener(opts.socket)
		if err != nil {
			return err // closeAll closes srv
		}
		d.inherited = nil // Serve closes l
		d.start(func() error { return srv.Serve(l) })
		served := strings.Join(names, ", ")
		if served == "" {
			served = "no NIC" // the tenants have them all; rnic stat still answers here
		}
		fmt.Fprintf(stdout, "rnicd: serving %s on %s\n", served, where)
	}
	for _, t := range opts.tenants {
		l, err := server.ListenAs(t.socket, t.access)
		if err != nil {
			return fmt.Errorf("tenant %s: %w", t.Name, err)
		}
		d.start(func() error { return srv.ServeTenant(t.Name, l) })
		fmt.Fprintf(stdout, "rnicd: tenant %s: serving %s on %s\n", t.Name, strings.Join(t.Devices, ", "), t.socket)
	}
	return nil
}

// start runs serve, one of the server's accept loops, until it ends.
func (d *daemon) start(serve func() error) {
	d.serving++
	go func() { d.served <- serve() }()
}

// listener is the socket to serve on and its path: the one systemd
// passed, else a new one at socket.
func (d *daemon) listener(socket string) (*net.UnixListener, string, error) {
	if d.inherited != nil {
		return d.inherited, d.inherited.Addr().String(), nil
	}
	l, err := server.Listen(socket)
	return l, socket, err
}

// closeAll closes the server, its clients first (their objects go before
// the NICs), then the NICs, last opened first.
func (d *daemon) closeAll() error {
	var errs []error
	if d.inherited != nil { // not served yet
		d.inherited.Close()
	}
	if d.srv != nil {
		d.srv.Close()
		for range d.serving {
			<-d.served
		}
	}
	for i := len(d.running) - 1; i >= 0; i-- {
		errs = append(errs, d.running[i].close())
	}
	return errors.Join(errs...)
}

// device is one running NIC, the pcap file it writes, and the NIC as the
// server serves it.
type device struct {
	spec  deviceSpec
	tap   *tapnic.NIC        // TAP mode
	udp   *embedded.NIC      // UDP mode
	iw    *embedded.IWARPNIC // TCP (iWARP) mode
	dev   ibv.Device
	pcap  *pcap.Writer
	ready string
}

// openDevice creates the spec's pcap file, if any, and opens the NIC.
func openDevice(s deviceSpec) (*device, error) {
	if s.Verbs != "" {
		return openVerbs(s)
	}
	d := &device{spec: s}
	if s.PcapPath != "" {
		pw, err := pcap.Create(s.PcapPath)
		if err != nil {
			return nil, fmt.Errorf("%s: pcap: %w", s.Name, err)
		}
		d.pcap = pw
		d.spec.Pcap = pw
	}
	if s.TCP.IsValid() {
		return openIWARP(d)
	}
	if s.IWARP {
		return openTAPIWARP(d)
	}
	var err error
	var en *embedded.NIC
	if s.UDP.IsValid() {
		en, err = embedded.Open(embedded.UDPConfig{Name: s.Name, Addr: s.UDP.Addr(), Port: s.UDP.Port(), MTU: s.MTU, Pcap: d.pcap,
			NoPoll:   true, // its clients spin on the rings (udp.Config.NoPoll)
			Loopback: !s.NoLoopback,
			// the port follows the interface under the address, as
			// rxe's follows its net device
			FollowLink: true,
			Faults:     s.Faults})
		if err == nil {
			d.udp = en
		}
		err = wrapOpen(err, "%s on udp %v", s.Name, s.UDP)
	} else {
		var tn *tapnic.NIC
		tn, err = tapnic.Open(d.spec.Config)
		if err == nil {
			d.tap, en = tn, tn.NIC
		}
		err = wrapOpen(err, "%s on tap %s", s.Name, s.TAP)
	}
	if err != nil {
		return nil, d.openFailed(err)
	}
	d.ready = d.readyLine() + faultsReady(s)
	closeNIC := en.Close
	if d.tap != nil {
		closeNIC = d.tap.Close
	}
	if d.dev, err = servedDevice(en, d.tap, closeNIC); err != nil {
		closeNIC()
		if d.pcap != nil {
			d.pcap.Close()
		}
		return nil, err
	}
	return d, nil
}

// openIWARP opens d's iWARP NIC on kernel TCP, served with its own
// rdma_cm and the kernel's TCP on its address for side channels.
func openIWARP(d *device) (*device, error) {
	s := d.spec
	n, err := embedded.OpenIWARP(embedded.IWARPConfig{Name: s.Name, Addr: s.TCP, MSS: iwarpLoopbackMSS(s.TCP), Pcap: d.pcap})
	if err != nil {
		return nil, d.openFailed(fmt.Errorf("%s on tcp %v: %w", s.Name, s.TCP, err))
	}
	d.iw = n
	d.ready = fmt.Sprintf("%s: iwarp tcp %v ready", s.Name, s.TCP)
	d.dev = n.Verbs(nic.IBVOptions{Network: server.KernelNetwork(n.Addr)})
	return d, nil
}

// iwarpLoopbackMSS sizes FPDUs for the path: loopback's MSS (65483) on a
// loopback address, Ethernet's (iwarp.DefaultMSS) elsewhere.
func iwarpLoopbackMSS(a netip.Addr) int {
	if a.IsLoopback() {
		return 65483
	}
	return 0
}

func wrapOpen(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf(format+": %w", append(args, err)...)
}

// close closes the NIC (a TAP it created disappears), then its pcap, which
// the NIC no longer writes.
func (d *device) close() error {
	var errs []error
	if err := d.dev.Close(); err != nil {
		errs = append(errs, fmt.Errorf("%s: close: %w", d.spec.Name, err))
	}
	if d.pcap != nil {
		if err := d.pcap.Close(); err != nil {
			errs = append(errs, fmt.Errorf("%s: pcap %s: %w", d.spec.Name, d.spec.PcapPath, err))
		}
	}
	return errors.Join(errs...)
}

// readyLine says what came up, e.g.
// "rnic0: tap t0 mac 02:00:0a:4d:00:32 ip 10.77.0.50/24 mtu 1500 ready" or
// "rnic0: udp 127.0.0.2:4791 mtu 1500 ready".
func (d *device) readyLine() string {
	if d.ready != "" {
		return d.ready
	}
	var b strings.Builder
	if d.udp != nil {
		port := d.spec.UDP.Port()
		if port == 0 {
			port = 4791
		}
		mtu := d.spec.MTU
		if mtu == 0 {
			mtu = 1500
		}
		fmt.Fprintf(&b, "%s: udp %v mtu %d ready", d.spec.Name, net.JoinHostPort(d.udp.Addr.String(), fmt.Sprint(port)), mtu)
		return b.String()
	}
	return d.tapReadyLine("tap")
}

func printHelp(w io.Writer) {
	fmt.Fprint(w, help)
	first := map[string]*string{}
	var devices []string
	fs := newFlagSet(first, &devices, &options{})
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// prefixed is err's message after one "rnicd: ": the daemon's packages
// start theirs with it already.
func prefixed(err error) string {
	return "rnicd: " + strings.TrimPrefix(err.Error(), "rnicd: ")
}
