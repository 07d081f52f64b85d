// Command rnicd runs rnic NICs in the TAP mode until SIGINT or SIGTERM:
// each NIC owns a TAP device as hardware owns its port, answers ARP, ND and
// ping on it, and speaks RoCEv2 and iWARP there.
package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/rnic/rnic/nic/tapnic"
	"github.com/rnic/rnic/transport"
)

const help = `usage: rnicd --tap NAME --ip CIDR [--ip6 CIDR] [--mac MAC] [--mtu N]
             [--pcap FILE] [--name rnic0] [--netns NS] [--bridge BR]
             [--device 'name=rnic1,tap=t1,ip=CIDR,...']...

Runs software RDMA NICs in the TAP mode until SIGINT or SIGTERM. Each NIC
owns a TAP device (a real Ethernet port: ARP, IPv6 ND, ping, RoCEv2 on UDP
4791, iWARP over its own TCP); a TAP that does not exist is created and
removed on exit, an existing one is attached to and left in place. The
NIC's addresses are its own, not the kernel's: put the TAP on a bridge
(--bridge) or give the kernel side an address of its own to reach it.

The flags describe the first NIC; every --device adds one more, with the
same keys as the flags (name, tap, ip, ip6, mac, mtu, pcap, netns, bridge;
tap and ip or ip6 required; names default to rnic0, rnic1, ... in order).
Once a NIC is up rnicd prints

    rnic0: tap t0 mac 02:00:0a:4d:00:32 ip 10.77.0.50/24 mtu 1500 ready

Needs CAP_NET_ADMIN. Exits 0 after a signal, 1 when a NIC fails to open
(those already open are closed), 2 on bad usage.

flags:
`

func main() {
	// Signals are caught before any NIC opens, so one arriving mid-start
	// still closes everything (and flushes the pcaps) instead of killing
	// the process.
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, stop))
}

// run opens every NIC args describe, reports each ready, waits for stop,
// closes them all and returns the exit status.
func run(args []string, stdout, stderr io.Writer, stop <-chan os.Signal) int {
	specs, err := parseArgs(args)
	if err != nil {
		if errors.Is(err, errHelp) {
			printHelp(stdout)
			return 0
		}
		fmt.Fprintf(stderr, "rnicd: %v (rnicd --help)\n", err)
		return 2
	}

	var running []*device
	closeAll := func() error {
		var errs []error
		// Last opened, first closed.
		for i := len(running) - 1; i >= 0; i-- {
			errs = append(errs, running[i].close())
		}
		return errors.Join(errs...)
	}
	for _, s := range specs {
		d, err := openDevice(s)
		if err != nil {
			fmt.Fprintf(stderr, "rnicd: %v\n", err)
			if cerr := closeAll(); cerr != nil {
				fmt.Fprintf(stderr, "rnicd: %v\n", cerr)
			}
			return 1
		}
		running = append(running, d)
		fmt.Fprintln(stdout, d.readyLine())
	}

	<-stop
	status := 0
	if err := closeAll(); err != nil {
		fmt.Fprintf(stderr, "rnicd: %v\n", err)
		status = 1
	}
	fmt.Fprintln(stdout, "rnicd: stopped")
	return status
}

// device is one running NIC and the pcap file it writes.
type device struct {
	spec deviceSpec
	nic  *tapnic.NIC
	pcap *transport.PcapWriter
}

// openDevice creates the spec's pcap file, if any, and opens the NIC.
func openDevice(s deviceSpec) (*device, error) {
	d := &device{spec: s}
	if s.PcapPath != "" {
		pw, err := transport.CreatePcap(s.PcapPath)
		if err != nil {
			return nil, fmt.Errorf("%s: pcap: %w", s.Name, err)
		}
		d.pcap = pw
		d.spec.Pcap = pw
	}
	n, err := tapnic.Open(d.spec.Config)
	if err != nil {
		if d.pcap != nil {
			d.pcap.Close()
			// An empty capture of a NIC that never ran would only mislead.
			os.Remove(s.PcapPath)
		}
		return nil, fmt.Errorf("%s on tap %s: %w", s.Name, s.TAP, err)
	}
	d.nic = n
	return d, nil
}

// close closes the NIC (a TAP it created disappears), then its pcap, which
// the NIC no longer writes.
func (d *device) close() error {
	var errs []error
	if err := d.nic.Close(); err != nil {
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
// "rnic0: tap t0 mac 02:00:0a:4d:00:32 ip 10.77.0.50/24 mtu 1500 ready".
func (d *device) readyLine() string {
	var b strings.Builder
	mac := d.nic.MAC
	fmt.Fprintf(&b, "%s: tap %s", d.spec.Name, d.spec.TAP)
	if d.spec.Netns != "" {
		fmt.Fprintf(&b, " netns %s", d.spec.Netns)
	}
	if d.spec.Bridge != "" {
		fmt.Fprintf(&b, " bridge %s", d.spec.Bridge)
	}
	fmt.Fprintf(&b, " mac %s", net.HardwareAddr(mac[:]))
	for _, p := range d.spec.Prefixes {
		key := "ip"
		if p.Addr().Is6() {
			key = "ip6"
		}
		fmt.Fprintf(&b, " %s %s", key, p)
	}
	fmt.Fprintf(&b, " mtu %d ready", d.nic.TAP().MTU())
	return b.String()
}

func printHelp(w io.Writer) {
	fmt.Fprint(w, help)
	first := map[string]*string{}
	var devices []string
	fs := newFlagSet(first, &devices)
	fs.SetOutput(w)
	fs.PrintDefaults()
}
