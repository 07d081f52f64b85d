package rping

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/tapnic"
)

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a run's
// goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type side struct {
	out, err syncBuffer
	res      chan error
}

// pair runs an embedded-mode server on 127.0.8.1 (a free port) and a
// client from 127.0.8.2 against it, both over kernel TCP on loopback.
func pair(t *testing.T, srv, cli Config) (*side, *side) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	s, c := &side{res: make(chan error, 1)}, &side{res: make(chan error, 1)}
	ready := make(chan netip.AddrPort, 1)
	srv.Server, srv.IWARP, srv.Addr = true, true, netip.MustParseAddr("127.0.8.1")
	srv.Port = 0
	srv.Out, srv.Err, srv.Ready = &s.out, &s.err, func(a netip.AddrPort) { ready <- a }
	// Port 0 asks for any free port; check() would make it 7174, so the
	// server gets a Connector whose listener takes the port as given.
	cn, err := NewIWARP(embedded.IWARPConfig{Addr: srv.Addr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cn.Close() })
	go func() { s.res <- runWith(ctx, srv, cn, 0) }()
	var addr netip.AddrPort
	select {
	case addr = <-ready:
	case err := <-s.res:
		t.Fatalf("server: %v", err)
	}
	cli.IWARP, cli.Addr, cli.Port = true, addr.Addr(), addr.Port()
	cli.Source = netip.MustParseAddr("127.0.8.2")
	cli.Out, cli.Err = &c.out, &c.err
	go func() { c.res <- Run(ctx, cli) }()
	return s, c
}

// runWith runs cfg on cn, listening on port (0: any).
func runWith(ctx context.Context, cfg Config, cn Connector, port uint16) error {
	if err := cfg.check(); err != nil {
		return err
	}
	return serve(ctx, &cfg, cn, netip.AddrPortFrom(cfg.Addr, port), cfg.Ready)
}

func wait(t *testing.T, name string, res chan error) error {
	t.Helper()
	select {
	case err := <-res:
		return err
	case <-time.After(40 * time.Second):
		t.Fatalf("%s did not finish", name)
		return nil
	}
}

func TestPingEmbedded(t *testing.T) {
	for _, c := range []struct{ size, count int }{
		{DefaultSize, 10}, {MinSize, 3}, {1000, 5}, {4096, 4}, {MaxSize, 2}, {64, 1},
	} {
		t.Run(fmt.Sprintf("size%d_count%d", c.size, c.count), func(t *testing.T) {
			s, cl := pair(t, Config{Verbose: true, Size: c.size}, Config{Verbose: true, Validate: true, Size: c.size, Count: c.count})
			if err := wait(t, "client", cl.res); err != nil {
				t.Fatalf("client: %v\nstderr: %s", err, cl.err.String())
			}
			if err := wait(t, "server", s.res); err != nil {
				t.Fatalf("server: %v\nstderr: %s", err, s.err.String())
			}
			// Both print every ping, as rping does: the client what came
			// back, the server what it read.
			var want, wantSrv strings.Builder
			buf := make([]byte, c.size)
			for n := range c.count {
				FillPing(buf, n)
				fmt.Fprintf(&want, "ping data: %s\n", cString(buf))
				fmt.Fprintf(&wantSrv, "server ping data: %s\n", cString(buf))
			}
			if got := cl.out.String(); got != want.String() {
				t.Errorf("client stdout:\n%.300s\nwant\n%.300s", got, want.String())
			}
			if got := s.out.String(); got != wantSrv.String() {
				t.Errorf("server stdout:\n%.300s\nwant\n%.300s", got, wantSrv.String())
			}
			if got, want := s.err.String(), "server DISCONNECT EVENT...\nwait for RDMA_READ_ADV state 10\n"; got != want {
				t.Errorf("server stderr %q, want %q", got, want)
			}
			if got, want := withoutWaitNotice(cl.err.String()), "client DISCONNECT EVENT...\n"; got != want {
				t.Errorf("client stderr %q, want %q", got, want)
			}
		})
	}
}

func TestPingQuiet(t *testing.T) {
	// Without -v rping prints nothing on stdout.
	s, cl := pair(t, Config{}, Config{Validate: true, Count: 3})
	if err := wait(t, "client", cl.res); err != nil {
		t.Fatal(err)
	}
	if err := wait(t, "server", s.res); err != nil {
		t.Fatal(err)
	}
	if cl.out.String() != "" || s.out.String() != "" {
		t.Fatalf("stdout without -v: client %q, server %q", cl.out.String(), s.out.String())
	}
}

func TestValidateFindsMismatch(t *testing.T) {
	// A server whose buffer is smaller than the client's READs only part of
	// the ping: rping posts the READ with the client's size, which does
	// not fit its sink, so the READ fails and the server stops; the client
	// then sees the connection end. Instead, make the server's strlen stop
	// early: a client size of 64 and a server size of 64, but the server
	// writes back strlen+1 bytes, so a NUL in the middle of the ping (put
	// there by the test's client hook) leaves the tail unwritten.
	s, cl := pair(t, Config{}, Config{Validate: true, Count: 2, Size: 64, fill: func(b []byte, n int) {
		FillPing(b, n)
		b[30] = 0
	}})
	err := wait(t, "client", cl.res)
	if !errors.Is(err, ErrMismatch) {
		t.Fatalf("client: %v, want ErrMismatch", err)
	}
	if !strings.Contains(cl.err.String(), "data mismatch!\n") {
		t.Fatalf("client stderr %q", cl.err.String())
	}
	if err := wait(t, "server", s.res); err != nil {
		t.Fatalf("server: %v (a client that goes away ends it well)", err)
	}
}

func TestConnectRefused(t *testing.T) {
	// Nothing listens on the port: the connection fails and Run says so.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var errb syncBuffer
	err := Run(ctx, Config{IWARP: true, Addr: netip.MustParseAddr("127.0.8.1"), Port: 1, Source: netip.MustParseAddr("127.0.8.3"), Count: 1, Err: &errb})
	var ce *ConnectError
	if !errors.As(err, &ce) {
		t.Fatalf("Run = %v, want a ConnectError", err)
	}
}

var daemonSpec = ibv.Spec{Backend: ibv.BackendDaemon, Name: "rnic0", Socket: "/x.sock"}

func TestConfigErrors(t *testing.T) {
	a := netip.MustParseAddr("127.0.8.1")
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{IWARP: true, Addr: a, Size: 25}, "Invalid size 25 (valid range is 26 to 65536)"},
		{Config{IWARP: true, Addr: a, Size: 65536}, "Invalid size 65536"},
		{Config{IWARP: true, Addr: a, Count: -1}, "Invalid count -1"},
		{Config{IWARP: true}, "needs the server's address"},
		{Config{IWARP: true, Addr: netip.IPv4Unspecified()}, "not a server address"},
		{Config{Server: true, IWARP: true, Source: a}, "-I is the client's"},
		{Config{Server: true}, "needs an address of its own (-a)"},
		{Config{Addr: a, MPACRC: true}, "MPA CRCs are iWARP's"},
		{Config{Addr: a, IWARP: true, Device: daemonSpec}, "--iwarp runs on this process's NIC"},
		{Config{Addr: a, TAP: &tapnic.Config{TAP: "t0"}, Device: daemonSpec}, "the TAP mode is this process's NIC"},
		{Config{Addr: a, Trace: io.Discard, Device: daemonSpec}, "the capture and the trace"},
	} {
		err := Run(context.Background(), c.cfg)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Run(%+v) = %v, want ErrConfig with %q", c.cfg, err, c.want)
		}
	}
}
