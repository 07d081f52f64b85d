// Run: open the NIC and its connection manager for the mode asked, then
// play the server or the client.

package rping

import (
	"context"
	"fmt"
	"net/netip"
	"time"

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
		c, closeNIC, err := openIWARP(&cfg)
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

// openIWARP opens the iWARP connection manager: on kernel TCP in the
// embedded mode, on the NIC's own TCP in the TAP mode. closeNIC closes the
// TAP-mode NIC after the Connector.
func openIWARP(cfg *Config) (c *IWARP, closeNIC func(), err error) {
	closeNIC = func() {}
	icfg := IWARPConfig{Addr: cfg.Source, CRC: cfg.MPACRC, Pcap: cfg.Pcap, Trace: cfg.Trace}
	if cfg.TAP != nil {
		tc := *cfg.TAP
		if tc.Pcap == nil {
			tc.Pcap = cfg.Pcap
		}
		n, err := tapnic.Open(tc)
		if err != nil {
			return nil, nil, fmt.Errorf("rping: open NIC on TAP %s: %w", tc.TAP, err)
		}
		closeNIC = func() {
			// A server closes second: its FIN waits in LAST_ACK for the
			// peer's ACK, and closing the TCP stack now would abort it with
			// a RST (the kernel would finish the close on its own). Give
			// the ACK a round trip's time.
			if cfg.Server {
				time.Sleep(lastACKLinger)
			}
			n.Close()
		}
		icfg.Network, icfg.Pcap, icfg.Name = n.Streams, nil, tc.Name
		icfg.Addr = n.Addrs[0]
		if cfg.Addr.IsValid() {
			icfg.Addr = n.AddrFor(cfg.Addr)
		}
		if cfg.Server && cfg.Addr.IsValid() && !cfg.Addr.IsUnspecified() && !ownAddr(n.Addrs, cfg.Addr) {
			n.Close()
			return nil, nil, fmt.Errorf("%w: -a %v is not one of the NIC's addresses %v", ErrConfig, cfg.Addr, n.Addrs)
		}
		icfg.MSS = mssFor(tc.MTU, icfg.Addr)
	}
	if c, err = NewIWARP(icfg); err != nil {
		closeNIC()
		return nil, nil, err
	}
	return c, closeNIC, nil
}

// lastACKLinger is how long a TAP-mode server lingers before closing its
// NIC, for the peer's ACK of its FIN.
const lastACKLinger = 200 * time.Millisecond

func ownAddr(addrs []netip.Addr, a netip.Addr) bool {
	for _, x := range addrs {
		if x == a.Unmap() {
			return true
		}
	}
	return false
}

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
