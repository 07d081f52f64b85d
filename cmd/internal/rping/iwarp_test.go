package rping

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/rnic/rnic/nic/embedded"
)

// TestIWARPConnectSettles: an iWARP Connect returns DefaultSettle after
// the connection is established, not at once, so that a Linux siw server
// has its QP in RTS before the first SEND (the settle of the old
// hand-built path, carried into the one Connector). Only the lower bound
// is asserted: a busy machine makes it longer, never shorter.
func TestIWARPConnectSettles(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	srv, err := NewIWARP(embedded.IWARPConfig{Addr: netip.MustParseAddr("127.0.8.21")})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cli, err := NewIWARP(embedded.IWARPConfig{Addr: netip.MustParseAddr("127.0.8.22")})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	cfg := &Config{Size: DefaultSize}
	ss, err := newSession(cfg, srv.Device())
	if err != nil {
		t.Fatal(err)
	}
	cs, err := newSession(cfg, cli.Device())
	if err != nil {
		t.Fatal(err)
	}
	l, err := srv.Listen(netip.AddrPortFrom(netip.MustParseAddr("127.0.8.21"), 0))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan struct{})
	go func() {
		req, err := l.Accept(ctx)
		if err == nil {
			_, err = req.Accept(ctx, ss.qp, rpingConnParam)
		}
		if err != nil {
			t.Error(err)
		}
		close(accepted)
	}()
	start := time.Now()
	cn, err := cli.Connect(ctx, cs.qp, l.Addr(), rpingConnParam)
	if err != nil {
		t.Fatal(err)
	}
	defer cn.Disconnect()
	if d := time.Since(start); d < DefaultSettle {
		t.Errorf("Connect returned %v after it began, before the settle of %v", d, DefaultSettle)
	}
	<-accepted
	ss.close()
	cs.close()
}
