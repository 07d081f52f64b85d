// Run: open the NIC and its connection manager for the mode asked, then
// play the server or the client.

package rping

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/rnic/rnic/cmd/internal/progkit"
	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rdmacm"
	"github.com/rnic/rnic/nic/tapnic"
)

// Run runs one rping side and returns nil when it ended as rping ends
// well: a client after Count pings (or when the server went away), a
// server when its client disconnected. What rping prints goes to cfg.Out
// and cfg.Err; the returned error says why it failed.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.check(); err != nil {
		return err
	}
	cn := cfg.Connector
	if cn == nil {
		open := openRoCE
		if cfg.IWARP {
			open = openIWARP
		}
		c, closeNIC, err := open(&cfg)
		if err != nil {
			return err
		}
		defer closeNIC()
		defer c.Close()
		cn = c
	}
	if cfg.Server {
		return serve(ctx, &cfg, cn, netip.AddrPortFrom(cfg.Addr, cfg.Port), cfg.Ready)
	}
	return ping(ctx, &cfg, cn, netip.AddrPortFrom(cfg.Addr, cfg.Port))
}

// openIWARP opens the iWARP NIC and its connection manager: on kernel
// TCP in the embedded mode, on the NIC's own TCP in the TAP mode.
// closeNIC closes the TAP-mode NIC after the Connector.
func openIWARP(cfg *Config) (c Connector, closeNIC func(), err error) {
	closeNIC = func() {}
	icfg := embedded.IWARPConfig{Name: cfg.Device.Name, CRC: cfg.MPACRC, Pcap: cfg.Pcap, Trace: cfg.Trace}
	if cfg.TAP != nil {
		if closeNIC, err = iwarpOnTAP(cfg, &icfg); err != nil {
			return nil, nil, err
		}
	} else if icfg.Addr, err = embeddedAddr(cfg, "iWARP"); err != nil {
		return nil, nil, err
	}
	ic, err := NewIWARP(icfg)
	if err != nil {
		closeNIC()
		return nil, nil, err
	}
	return ic, closeNIC, nil
}

// iwarpOnTAP opens the TAP-mode NIC whose own TCP carries the iWARP NIC
// icfg describes, and fills in its address and MSS. closeNIC closes it.
func iwarpOnTAP(cfg *Config, icfg *embedded.IWARPConfig) (closeNIC func(), err error) {
	tc := *cfg.TAP
	if tc.Pcap == nil {
		tc.Pcap = cfg.Pcap
	}
	n, err := tapnic.Open(tc)
	if err != nil {
		return nil, fmt.Errorf("rping: open NIC on TAP %s: %w", tc.TAP, err)
	}
	if cfg.Server && cfg.Addr.IsValid() && !cfg.Addr.IsUnspecified() && !progkit.HasAddr(n.Addrs, cfg.Addr) {
		n.Close()
		return nil, fmt.Errorf("%w: -a %v is not one of the NIC's addresses %v", ErrConfig, cfg.Addr, n.Addrs)
	}
	icfg.Network, icfg.Pcap = n.Streams, nil
	if tc.Name != "" {
		icfg.Name = tc.Name
	}
	icfg.Addr = n.Addrs[0]
	if cfg.Addr.IsValid() {
		icfg.Addr = n.AddrFor(cfg.Addr)
	}
	icfg.MSS = mssFor(tc.MTU, icfg.Addr)
	return func() {
		// A server closes second: its FIN waits in LAST_ACK for the
		// peer's ACK, and closing the TCP stack now would abort it with
		// a RST (the kernel would finish the close on its own). Give
		// the ACK a round trip's time.
		if cfg.Server {
			time.Sleep(lastACKLinger)
		}
		n.Close()
	}, nil
}

// embeddedAddr is the address of an embedded-mode NIC: a server's own
// (-a), a client's -I, or the kernel's source toward the server.
func embeddedAddr(cfg *Config, transport string) (netip.Addr, error) {
	if cfg.Server {
		if !cfg.Addr.IsValid() || cfg.Addr.IsUnspecified() {
			return netip.Addr{}, fmt.Errorf("%w: over %s in the embedded mode the server's NIC needs an address of its own (-a)", ErrConfig, transport)
		}
		return cfg.Addr, nil
	}
	if cfg.Source.IsValid() {
		return cfg.Source, nil
	}
	return sourceToward(cfg.Addr, cfg.Port)
}

// openRoCE opens the RoCEv2 device and its rdma_cm. A local device is a NIC
// of this process with nic/rdmacm on its QP1: in the embedded mode a NIC on
// a kernel UDP socket of its own address (-a for a server; -I, or the
// kernel's route toward the server, for a client), in the TAP mode the NIC
// on the TAP. Any other is opened by its string (ibv.Open). closeNIC closes
// the device after the Connector.
func openRoCE(cfg *Config) (c Connector, closeNIC func(), err error) {
	var d ibv.Device
	if cfg.Device.Backend == ibv.BackendLocal {
		d, err = openLocalRoCE(cfg)
	} else {
		d, err = openRemoteRoCE(cfg)
	}
	if err != nil {
		return nil, nil, err
	}
	rc, err := NewCM(d)
	if err != nil {
		d.Close()
		return nil, nil, err
	}
	return rc, func() { d.Close() }, nil
}

// openLocalRoCE builds this process's NIC, with rdma_cm, as an ibv.Device.
func openLocalRoCE(cfg *Config) (ibv.Device, error) {
	var n *embedded.NIC
	var closeNIC func() error
	if cfg.TAP != nil {
		tc := progkit.TAPConfig(*cfg.TAP, cfg.Device.Name, cfg.Pcap, cfg.Trace)
		tn, addrs, closeTAP, err := openTAPNIC(tc)
		if err != nil {
			return nil, fmt.Errorf("rping: open NIC on TAP %s: %w", tc.TAP, err)
		}
		if cfg.Server && cfg.Addr.IsValid() && !cfg.Addr.IsUnspecified() && !progkit.HasAddr(addrs, cfg.Addr) {
			closeTAP()
			return nil, fmt.Errorf("%w: -a %v is not one of the NIC's addresses %v", ErrConfig, cfg.Addr, addrs)
		}
		n, closeNIC = tn, closeTAP
	} else {
		local, err := embeddedAddr(cfg, "RoCEv2")
		if err != nil {
			return nil, err
		}
		en, err := openKernelNIC(local, cfg.Pcap, cfg)
		if err != nil {
			return nil, err
		}
		n, closeNIC = en, en.Close
	}
	d, err := rdmacm.LocalWith(n, rdmacm.Config{}, nic.IBVOptions{Close: closeNIC})
	if err != nil {
		closeNIC()
		return nil, fmt.Errorf("rping: %w", err)
	}
	return d, nil
}

// openTAPNIC opens a TAP-mode NIC for RoCEv2: the NIC, its addresses and
// what closes it (the TAP too). Tests put nic/tapnic/tapnictest's fake in
// its place.
var openTAPNIC = func(cfg tapnic.Config) (*embedded.NIC, []netip.Addr, func() error, error) {
	tn, err := tapnic.Open(cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	return tn.NIC, tn.Addrs, tn.Close, nil
}

// openRemoteRoCE opens the device cfg.Device names (rnicd's, or one of
// libibverbs). Its rdma_cm picks the source address toward the server; -I,
// if given, must be one of the device's.
func openRemoteRoCE(cfg *Config) (ibv.Device, error) {
	return kit.OpenDevice(cfg.Device, func(d ibv.Device) error {
		if _, ok := d.(ibv.ConnManager); !ok {
			return fmt.Errorf("rping: device %v offers no rdma_cm", cfg.Device)
		}
		if cfg.Source.IsValid() && !progkit.HasAddr(d.GIDs(), cfg.Source) {
			return fmt.Errorf("%w: -I %v is not an address of %v", ErrConfig, cfg.Source, cfg.Device)
		}
		return nil
	})
}

// sourceToward is the address the kernel would send from toward the
// server (rdma_resolve_addr without a source address): the embedded-mode
// client's NIC takes it.
func sourceToward(server netip.Addr, port uint16) (netip.Addr, error) {
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(server, port)))
	if err != nil {
		return netip.Addr{}, fmt.Errorf("rping: no route to %v: %w", server, err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).AddrPort().Addr().Unmap(), nil
}

// lastACKLinger is how long a TAP-mode server lingers before closing its
// NIC, for the peer's ACK of its FIN.
const lastACKLinger = 200 * time.Millisecond

// mssFor is the TCP payload of a full segment on an Ethernet MTU, less the
// 12 bytes of the timestamp option both Linux and gVisor send: siw sizes
// its FPDUs to that (tcp_sock's mss_cache).
func mssFor(mtu int, local netip.Addr) int {
	if mtu == 0 {
		mtu = 1500
	}
	ip := 20
	if local.Is6() && !local.Is4In6() {
		ip = 40
	}
	return mtu - ip - 20 - 12
}
