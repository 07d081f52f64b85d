// iWARP NICs on a TAP (--transport iwarp, transport=iwarp): the TAP-mode
// NIC's host stack and its own TCP (gVisor) carry the iWARP engine, so the
// NIC's rdma_cm speaks MPA on the bridge as Linux siw does, from the TAP's
// address, and its side channels use the same TCP. It connects as siw does
// under rdma_cm (no peer-to-peer RTR) and lets siw's QP take its socket
// before the first FPDU (embedded.IWARPConfig.Settle).

package main

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"

	"github.com/rnic/rnic/iwarp"
	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/tapnic"
)

// openTAPIWARP opens d's TAP and the iWARP NIC on its TCP, served with the
// NIC's MPA rdma_cm and the TAP's TCP for side channels. The TAP NIC's
// RoCEv2 engine stays idle beside it (no QP of it is ever served); its
// host stack answers ARP, ND and ping for the iWARP NIC.
func openTAPIWARP(d *device) (*device, error) {
	s := d.spec
	tn, err := tapnic.Open(s.Config)
	if err != nil {
		return nil, d.openFailed(fmt.Errorf("%s on tap %s: %w", s.Name, s.TAP, err))
	}
	// As siw under rdma_cm: no peer-to-peer RTR offered (siw's
	// peer_to_peer is off; siw reads only the RTR's FPDU before its QP
	// takes the socket), and a first FPDU that waits for siw's QP.
	iw, err := embedded.OpenIWARP(embedded.IWARPConfig{Name: s.Name, Addr: tn.Addrs[0],
		Network: tn.Streams, MSS: tapMSS(tn.TAP().MTU(), tn.Addrs[0]),
		RTR: iwarp.RTRNone, Settle: embedded.DefaultSettle})
	if err != nil {
		tn.Close()
		return nil, d.openFailed(fmt.Errorf("%s on tap %s: %w", s.Name, s.TAP, err))
	}
	d.tap, d.iw = tn, iw
	d.ready = d.tapReadyLine("iwarp tap") + faultsReady(s)
	d.dev = iw.Verbs(nic.IBVOptions{Network: tn.Network(), Close: func() error {
		return errors.Join(iw.Close(), tn.Close())
	}, Counters: withFaultCounters(func() []ibv.Counter { return append(iw.PortCounters(), tn.HostPortCounters()...) },
		tn.FaultCounters)})
	return d, nil
}

// openFailed closes and removes the pcap file of a NIC that did not open
// (an empty capture of a NIC that never ran would only mislead) and
// returns err.
func (d *device) openFailed(err error) error {
	if d.pcap != nil {
		d.pcap.Close()
		os.Remove(d.spec.PcapPath)
	}
	return err
}

// tapMSS sizes FPDUs to one TCP segment on an Ethernet MTU: the MTU less
// the IP and TCP headers and the timestamp option gVisor sends, as siw
// sizes its FPDUs to the connection's MSS.
func tapMSS(mtu int, local netip.Addr) int {
	ip := 20
	if local.Is6() && !local.Is4In6() {
		ip = 40
	}
	return mtu - ip - 20 - 12
}

// tapReadyLine says what came up on a TAP, e.g.
// "rnic0: tap t0 mac 02:00:0a:4d:00:32 ip 10.77.0.50/24 mtu 1500 ready",
// what naming the mode ("tap", "iwarp tap").
func (d *device) tapReadyLine(what string) string {
	var b strings.Builder
	mac := d.tap.MAC
	fmt.Fprintf(&b, "%s: %s %s", d.spec.Name, what, d.spec.TAP)
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
	fmt.Fprintf(&b, " mtu %d ready", d.tap.TAP().MTU())
	return b.String()
}
