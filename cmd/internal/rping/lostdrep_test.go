package rping

import (
	"context"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/rdmacm"
	"github.com/rnic/rnic/roce/cm"
	"github.com/rnic/rnic/transport"
)

// dropDREPs is a link that loses every DREP it is asked to send.
type dropDREPs struct {
	transport.Endpoint
	lost atomic.Int32
}

func (d *dropDREPs) Send(f []byte) error {
	if madAttr(f) == cm.AttrDREP {
		d.lost.Add(1)
		return nil
	}
	return d.Endpoint.Send(f)
}

// madAttr is the CM attribute of a GSI frame (IPv4, no VLAN), or 0.
func madAttr(f []byte) cm.AttrID {
	const bth = 14 + 20 + 8
	const mad = bth + 12 + 8
	if len(f) < mad+cm.MADLen || f[bth+5] != 0 || f[bth+6] != 0 || f[bth+7] != 1 {
		return 0
	}
	return cm.AttrID(uint16(f[mad+16])<<8 | uint16(f[mad+17]))
}

// rdmaCMNIC opens an embedded NIC on link with rdma_cm (its own timing:
// a DREQ is sent again only after about 6.4 s).
func rdmaCMNIC(t *testing.T, link transport.Endpoint, addr netip.Addr) *CM {
	t.Helper()
	n, err := embedded.Open(embedded.UDPConfig{Addr: addr, Link: link})
	if err != nil {
		t.Fatal(err)
	}
	cn, err := NewRoCE(n, rdmacm.Config{})
	if err != nil {
		n.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { cn.Close(); n.Close() })
	return cn
}

// TestPingRoCELostDREP: the server's DREP never arrives (lost, and the
// server gone before the DREQ's retry), so the client's DREQ is never
// answered within rping's bound. The client still succeeds, as rping on
// Linux does (rdma_disconnect does not wait for the DREP): every ping was
// exchanged.
func TestPingRoCELostDREP(t *testing.T) {
	defer func(d time.Duration) { disconnectWait = d }(disconnectWait)
	disconnectWait = 500 * time.Millisecond // well inside the DREQ's first retry
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pa, pb := transport.NewPipe()
	srvLink := &dropDREPs{Endpoint: pb}
	cli, srv := rdmaCMNIC(t, pa, roceClientAddr), rdmaCMNIC(t, srvLink, roceServerAddr)

	s, c := &side{res: make(chan error, 1)}, &side{res: make(chan error, 1)}
	ready := make(chan netip.AddrPort, 1)
	scfg := Config{Server: true, Addr: roceServerAddr, Out: &s.out, Err: &s.err,
		Ready: func(a netip.AddrPort) { ready <- a }}
	go func() { s.res <- runWith(ctx, scfg, srv, 0) }()
	var addr netip.AddrPort
	select {
	case addr = <-ready:
	case err := <-s.res:
		t.Fatalf("server: %v", err)
	}
	ccfg := Config{Verbose: true, Validate: true, Count: 3, Size: DefaultSize, Addr: roceServerAddr, Out: &c.out, Err: &c.err}
	if err := ccfg.check(); err != nil {
		t.Fatal(err)
	}
	go func() { c.res <- ping(ctx, &ccfg, cli, addr) }()
	if err := wait(t, "server", s.res); err != nil {
		t.Fatalf("server: %v\nstderr: %s", err, s.err.String())
	}
	if err := wait(t, "client", c.res); err != nil {
		t.Fatalf("client with its DREP lost: %v\nstderr: %s", err, c.err.String())
	}
	if n := strings.Count(c.out.String(), "ping data: "); n != 3 {
		t.Fatalf("client printed %d pings, want 3:\n%s", n, c.out.String())
	}
	if srvLink.lost.Load() == 0 {
		t.Fatal("no DREP was sent to lose")
	}
	if ctr := cli.CM().Manager().Counters(); ctr.Timeouts != 0 {
		t.Fatalf("client CM counters %+v: the DREQ timed out within rping's bound", ctr)
	}
}
