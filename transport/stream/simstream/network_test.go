// Tests of connection set-up on the simulated network: the handshake's
// timeline, refusal, timeout, cancel, listener close, and addresses.

package simstream_test

import (
	"errors"
	"io"
	"net/netip"
	"testing"
	"time"

	"github.com/rnic/rnic/transport/clock"
	"github.com/rnic/rnic/transport/stream"
	"github.com/rnic/rnic/transport/stream/simstream"
	"github.com/rnic/rnic/transport/stream/streamtest"
)

var (
	simClient = netip.MustParseAddr("10.0.0.1")
	simServer = netip.MustParseAddrPort("10.0.0.2:18515")
)

type dialResult struct {
	at   time.Duration
	conn stream.Conn
	err  error
	n    int
}

// dial dials on n and records the outcome.
func dial(clk *clock.Virtual, n stream.Dialer, local netip.Addr, remote netip.AddrPort) (*dialResult, func()) {
	r := &dialResult{}
	cancel := n.Dial(local, remote, func(c stream.Conn, err error) {
		r.at, r.conn, r.err = clk.Now(), c, err
		r.n++
	})
	return r, cancel
}

func TestSimNetConnectAccept(t *testing.T) {
	clk := clock.NewVirtual()
	const lat, delay = 10 * time.Microsecond, 7 * time.Microsecond
	n := simstream.NewNetwork(clk, simstream.NetConfig{
		Conn:        simstream.Config{Latency: lat, Chop: 0.5, Seed: 9},
		AcceptDelay: delay,
	})
	l, err := n.Listen(simServer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.Listen(simServer); !errors.Is(err, stream.ErrAddrInUse) {
		t.Errorf("second Listen: %v, want ErrAddrInUse", err)
	}
	var (
		acceptedAt time.Duration
		server     stream.Conn
		ss         *streamtest.Sink
	)
	l.SetAcceptor(func(c stream.Conn) {
		acceptedAt, server = clk.Now(), c
		ss = streamtest.NewSink(c, clk.Now)
		c.Write([]byte("MPA ID Rep Frame"))
		c.Close()
	})
	r, _ := dial(clk, n, simClient, simServer)
	var cs *streamtest.Sink
	clk.Run(func() bool { return r.n > 0 })
	if r.err != nil {
		t.Fatalf("Dial: %v", r.err)
	}
	if r.at != 2*lat+delay {
		t.Errorf("dial done at %v, want %v", r.at, 2*lat+delay)
	}
	cs = streamtest.NewSink(r.conn, clk.Now)
	r.conn.Write([]byte("MPA ID Req Frame"))
	r.conn.Close()
	clk.Run(nil)
	if acceptedAt != 3*lat+delay {
		t.Errorf("accepted at %v, want %v", acceptedAt, 3*lat+delay)
	}
	if server == nil {
		t.Fatal("nothing accepted")
	}
	streamtest.CheckDelivered(t, "server", ss, []byte("MPA ID Req Frame"), io.EOF)
	streamtest.CheckDelivered(t, "client", cs, []byte("MPA ID Rep Frame"), io.EOF)
	if !r.conn.Active() || server.Active() {
		t.Errorf("Active: client %v, server %v", r.conn.Active(), server.Active())
	}
	if server.LocalAddr() != simServer || r.conn.RemoteAddr() != simServer ||
		r.conn.LocalAddr() != server.RemoteAddr() || r.conn.LocalAddr().Addr() != simClient ||
		r.conn.LocalAddr().Port() < 49152 {
		t.Errorf("addresses: client %v->%v, server %v->%v", r.conn.LocalAddr(), r.conn.RemoteAddr(), server.LocalAddr(), server.RemoteAddr())
	}
	if r.n != 1 {
		t.Errorf("done called %d times", r.n)
	}
}

func TestSimNetRefusedAndTimeout(t *testing.T) {
	const lat = 10 * time.Microsecond
	dropped := netip.MustParseAddrPort("10.0.0.3:18515")
	refused := netip.MustParseAddrPort("10.0.0.4:18515")
	clk := clock.NewVirtual()
	n := simstream.NewNetwork(clk, simstream.NetConfig{
		Conn:        simstream.Config{Latency: lat},
		DialTimeout: time.Second,
		Connect: func(local, remote netip.AddrPort) simstream.ConnectVerdict {
			switch remote {
			case dropped:
				return simstream.ConnectDrop
			case refused:
				return simstream.ConnectRefuse
			}
			return simstream.ConnectAuto
		},
	})
	for _, addr := range []netip.AddrPort{dropped, refused} {
		l, err := n.Listen(addr)
		if err != nil {
			t.Fatal(err)
		}
		accepted := false
		l.SetAcceptor(func(stream.Conn) { accepted = true })
		defer func() {
			if accepted {
				t.Errorf("%v: the acceptor ran for a refused or dropped SYN", addr)
			}
		}()
	}
	nobody, _ := dial(clk, n, simClient, simServer)
	ref, _ := dial(clk, n, simClient, refused)
	drop, _ := dial(clk, n, simClient, dropped)
	clk.Run(nil)
	for name, c := range map[string]struct {
		r    *dialResult
		err  error
		when time.Duration
	}{
		"nobody listening": {nobody, stream.ErrRefused, 2 * lat},
		"ConnectRefuse":    {ref, stream.ErrRefused, 2 * lat},
		"ConnectDrop":      {drop, stream.ErrTimeout, time.Second},
	} {
		if c.r.n != 1 || !errors.Is(c.r.err, c.err) || c.r.conn != nil || c.r.at != c.when {
			t.Errorf("%s: done %d times, at %v with %v, %v; want once at %v with %v", name, c.r.n, c.r.at, c.r.conn, c.r.err, c.when, c.err)
		}
	}
}

func TestSimNetTimeoutShorterThanHandshake(t *testing.T) {
	clk := clock.NewVirtual()
	n := simstream.NewNetwork(clk, simstream.NetConfig{
		Conn: simstream.Config{Latency: time.Millisecond}, AcceptDelay: time.Second, DialTimeout: 100 * time.Millisecond,
	})
	l, _ := n.Listen(simServer)
	l.SetAcceptor(func(stream.Conn) { t.Error("accepted after the dialer gave up") })
	r, _ := dial(clk, n, simClient, simServer)
	clk.Run(nil)
	if r.n != 1 || !errors.Is(r.err, stream.ErrTimeout) || r.at != 100*time.Millisecond {
		t.Errorf("done %d times at %v with %v", r.n, r.at, r.err)
	}
}

func TestSimNetCancel(t *testing.T) {
	clk := clock.NewVirtual()
	n := simstream.NewNetwork(clk, simstream.NetConfig{Conn: simstream.Config{Latency: time.Millisecond}})
	l, _ := n.Listen(simServer)
	l.SetAcceptor(func(stream.Conn) { t.Error("accepted a canceled dial") })
	r, cancel := dial(clk, n, simClient, simServer)
	clk.RunFor(1500 * time.Microsecond) // the SYN is there, the SYN-ACK on its way
	cancel()
	if r.n != 0 {
		t.Fatal("cancel called done synchronously")
	}
	clk.Run(nil)
	cancel()
	if r.n != 1 || !errors.Is(r.err, stream.ErrCanceled) {
		t.Errorf("done %d times with %v", r.n, r.err)
	}
	// Cancel after success does nothing.
	l.SetAcceptor(func(stream.Conn) {})
	r, cancel = dial(clk, n, simClient, simServer)
	clk.Run(nil)
	cancel()
	clk.Run(nil)
	if r.n != 1 || r.err != nil {
		t.Errorf("done %d times with %v", r.n, r.err)
	}
}

func TestSimNetBacklogAndClose(t *testing.T) {
	clk := clock.NewVirtual()
	n := simstream.NewNetwork(clk, simstream.NetConfig{})
	l, _ := n.Listen(simServer)
	// No acceptor yet: the connection completes and waits in the backlog,
	// with the client's bytes.
	r, _ := dial(clk, n, simClient, simServer)
	clk.Run(nil)
	if r.err != nil {
		t.Fatal(r.err)
	}
	r.conn.Write([]byte("queued"))
	clk.Run(nil)
	var ss *streamtest.Sink
	l.SetAcceptor(func(c stream.Conn) { ss = streamtest.NewSink(c, nil) })
	clk.Run(nil)
	if ss == nil || string(ss.Got) != "queued" {
		t.Fatalf("backlogged connection: %v", ss)
	}
	// A connection waiting when the listener closes is reset.
	l.SetAcceptor(nil)
	r2, _ := dial(clk, n, simClient, simServer)
	clk.Run(nil)
	cs := streamtest.NewSink(r2.conn, nil)
	l.Close()
	l.Close()
	clk.Run(nil)
	streamtest.CheckDelivered(t, "client of a closed listener", cs, nil, stream.ErrReset)
	r3, _ := dial(clk, n, simClient, simServer)
	clk.Run(nil)
	if !errors.Is(r3.err, stream.ErrRefused) {
		t.Errorf("dial after Close: %v, want ErrRefused", r3.err)
	}
	// Port 0 picks an ephemeral port; the unspecified address matches any.
	l2, err := n.Listen(netip.MustParseAddrPort("[::]:0"))
	if err != nil || l2.Addr().Port() == 0 {
		t.Fatalf("Listen([::]:0): %v, %v", l2, err)
	}
	l2.SetAcceptor(func(stream.Conn) {})
	r4, _ := dial(clk, n, netip.Addr{}, netip.AddrPortFrom(netip.MustParseAddr("fd00::7"), l2.Addr().Port()))
	clk.Run(nil)
	if r4.err != nil || r4.conn.LocalAddr().Addr() != netip.MustParseAddr("fd00::7") {
		t.Errorf("dial to the wildcard listener: %v, local %v", r4.err, r4.conn)
	}
}

func TestSimNetPerConnectionSeeds(t *testing.T) {
	// Each connection has its own random stream: the chunks of the second
	// connection do not depend on the traffic of the first.
	run := func(firstBytes int) []int {
		clk := clock.NewVirtual()
		n := simstream.NewNetwork(clk, simstream.NetConfig{Conn: simstream.Config{Seed: 3, Chop: 0.5}})
		l, _ := n.Listen(simServer)
		var sinks []*streamtest.Sink
		l.SetAcceptor(func(c stream.Conn) { sinks = append(sinks, streamtest.NewSink(c, nil)) })
		r1, _ := dial(clk, n, simClient, simServer)
		r2, _ := dial(clk, n, simClient, simServer)
		clk.Run(nil)
		r1.conn.Write(make([]byte, firstBytes))
		r2.conn.Write(make([]byte, 50000))
		clk.Run(nil)
		return sinks[1].Chunks
	}
	a, b := run(1000), run(70000)
	if len(a) != len(b) {
		t.Fatalf("second connection's chunks depend on the first's traffic: %d vs %d", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("second connection's chunks depend on the first's traffic")
		}
	}
}
