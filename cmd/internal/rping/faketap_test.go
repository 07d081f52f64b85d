// rping's TAP mode over RoCEv2 on nic/tapnic/tapnictest's fake TAPs.

package rping

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/tapnic"
	"github.com/rnic/rnic/nic/tapnic/tapnictest"
)

// TestPingRoCETAPMode: both sides in the TAP mode (on
// nic/tapnic/tapnictest's fake TAPs, linked to each other): the NICs are
// the TAPs', a local --ib-dev names the client's, the pings come back
// intact, and each side closes its NIC once.
func TestPingRoCETAPMode(t *testing.T) {
	f := tapnictest.New("t-a", "t-b")
	old := openTAPNIC
	openTAPNIC = func(cfg tapnic.Config) (*embedded.NIC, []netip.Addr, func() error, error) {
		h, err := f.Open(cfg)
		if err != nil {
			return nil, nil, nil, err
		}
		addrs := make([]netip.Addr, len(cfg.Prefixes))
		for i, p := range cfg.Prefixes {
			addrs[i] = p.Addr()
		}
		return h.NIC(), addrs, h.Close, nil
	}
	t.Cleanup(func() { openTAPNIC = old })

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srvAddr := netip.MustParsePrefix("10.0.0.1/24")
	ready := make(chan netip.AddrPort, 1)
	s, c := &side{res: make(chan error, 1)}, &side{res: make(chan error, 1)}
	go func() {
		s.res <- Run(ctx, Config{Server: true, Addr: srvAddr.Addr(), TAP: &tapnic.Config{TAP: "t-a", Prefixes: []netip.Prefix{srvAddr}},
			Verbose: true, Out: &s.out, Err: &s.err, Ready: func(a netip.AddrPort) { ready <- a }})
	}()
	var addr netip.AddrPort
	select {
	case addr = <-ready:
	case err := <-s.res:
		t.Fatalf("server: %v", err)
	}
	go func() {
		c.res <- Run(ctx, Config{Addr: addr.Addr(), Port: addr.Port(), Count: 3, Validate: true, Verbose: true,
			Device: ibv.Spec{Name: "rnic4"}, TAP: &tapnic.Config{TAP: "t-b", Prefixes: []netip.Prefix{netip.MustParsePrefix("10.0.0.2/24")}},
			Out: &c.out, Err: &c.err})
	}()
	if err := wait(t, "client", c.res); err != nil {
		t.Fatalf("client: %v\nstderr: %s", err, c.err.String())
	}
	if err := wait(t, "server", s.res); err != nil {
		t.Fatalf("server: %v\nstderr: %s", err, s.err.String())
	}
	if n := strings.Count(c.out.String(), "ping data: rdma-ping-"); n != 3 {
		t.Errorf("client stdout %q: want 3 pings", c.out.String())
	}
	if got := f.Opened("t-b").Name; got != "rnic4" {
		t.Errorf("client's TAP NIC named %q, want rnic4 (--ib-dev)", got)
	}
	if a, b := f.Closes("t-a"), f.Closes("t-b"); a != 1 || b != 1 {
		t.Errorf("NICs closed %d and %d times, want once each", a, b)
	}
}
