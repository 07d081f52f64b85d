package perf

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rnic/rnic/nic/tapnic"
	"github.com/rnic/rnic/transport"
	"github.com/rnic/rnic/transport/pcap"
)

// The loopback addresses of this file's two-process iWARP tests: no other
// test package uses them, so their ports (the CM's 18516 included) are
// this file's.
var (
	iwServerAddr = netip.MustParseAddr("127.0.7.2")
	iwClientAddr = netip.MustParseAddr("127.0.7.3")
)

// runRoles runs srv as the server on a goroutine and cli as the client,
// as two processes would, and returns both outcomes. The server's side
// channel is a listener of the test on an ephemeral port.
func runRoles(t *testing.T, ctx context.Context, srv, cli Config) (sres, cres *Result, serr, cerr error) {
	t.Helper()
	l, err := net.Listen("tcp", netip.AddrPortFrom(iwServerAddr, 0).String())
	if err != nil {
		t.Fatal(err)
	}
	srv.Serve, srv.Listener = true, l
	if !srv.Addr.IsValid() {
		srv.Addr = iwServerAddr
	}
	cli.Server, cli.Port = iwServerAddr.String(), l.Addr().(*net.TCPAddr).Port
	if !cli.Addr.IsValid() {
		cli.Addr = iwClientAddr
	}
	type ret struct {
		res *Result
		err error
	}
	done := make(chan ret, 1)
	go func() {
		res, err := Run(ctx, srv)
		done <- ret{res, err}
	}()
	cres, cerr = Run(ctx, cli)
	s := <-done
	return s.res, cres, s.err, cerr
}

// TestIWARPTwoProcesses runs an iWARP server and client, one role each
// as two processes would, on kernel TCP between two loopback addresses:
// the server is told nothing but that it serves iWARP; the QPs connect
// through the connection manager to the port the server names. Each run
// completes with sane figures, verified data and the raw TCP figure, and
// both sides print the same result.
func TestIWARPTwoProcesses(t *testing.T) {
	for _, c := range []struct {
		op      Op
		mode    Mode
		size    int
		rxDepth int
		cmPort  int // the server's IWARPPort
	}{
		{OpWrite, ModeBW, 5000, 0, 0}, // the default CM port, 18516
		{OpRead, ModeBW, 5000, 0, -1},
		{OpSend, ModeBW, 5000, 16, -1}, // the client waits for the server's credits
		{OpWrite, ModeLat, 8, 0, -1},
		{OpSend, ModeLat, 100, 0, -1},
		{OpAtomic, ModeBW, 0, 0, -1},
	} {
		t.Run(string(c.op)+" "+string(c.mode), func(t *testing.T) {
			var srvOut, cliOut bytes.Buffer
			srvTrace, cliTrace := &lockedBuffer{}, &lockedBuffer{}
			cfg := Config{IWARP: true, Op: c.op, Mode: c.mode, Size: c.size, Iters: 200, QPs: 2, RxDepth: c.rxDepth,
				Out: &cliOut, Trace: cliTrace}
			sres, res, serr, err := runRoles(t, testCtx(t), Config{IWARP: true, IWARPPort: c.cmPort, Out: &srvOut, Trace: srvTrace}, cfg)
			if err != nil || serr != nil {
				t.Fatalf("client %v\n%s\nserver %v\n%s", err, cliOut.String(), serr, srvOut.String())
			}
			checkResult(t, cfg, res)
			if !res.IWARP || res.MTU != IWARPMSS {
				t.Errorf("iWARP %v, MSS %d, want %d on loopback", res.IWARP, res.MTU, IWARPMSS)
			}
			for _, out := range []string{cliOut.String(), srvOut.String()} {
				for _, want := range []string{"Transport type : IW", "rdma_cm QPs\t : ON", "\nraw tcp: ", "rnic/raw = "} {
					if !strings.Contains(out, want) {
						t.Errorf("report lacks %q:\n%s", want, out)
					}
				}
			}
			if sres.Check != res.Check || len(sres.Client) != 2 || sres.Client[1] != res.Client[1] || sres.Server[0] != res.Server[0] {
				t.Errorf("server's result %+v differs from the client's %+v", sres, res)
			}
			if g := netip.AddrFrom16(res.Server[0].GID).Unmap(); g != iwServerAddr {
				t.Errorf("server key GID %v", g)
			}
			// The QPs connected through the CM, to the port the server
			// listened on.
			if c.cmPort == 0 {
				want := fmt.Sprintf("listening on %v", netip.AddrPortFrom(iwServerAddr, DefaultIWARPPort))
				if !strings.Contains(srvTrace.String(), want) {
					t.Errorf("server trace lacks %q", want)
				}
				want = fmt.Sprintf("connecting to %v", netip.AddrPortFrom(iwServerAddr, DefaultIWARPPort))
				if strings.Count(cliTrace.String(), want) != 2 {
					t.Errorf("client trace lacks two %q", want)
				}
			}
		})
	}
}

// TestIWARPTwoProcessesNoRaw: --no-raw across processes leaves the raw
// figure out on both sides.
func TestIWARPTwoProcessesNoRaw(t *testing.T) {
	var srvOut, cliOut bytes.Buffer
	cfg := Config{IWARP: true, Op: OpRead, Mode: ModeLat, Iters: 50, NoRaw: true, Out: &cliOut}
	sres, res, serr, err := runRoles(t, testCtx(t), Config{IWARP: true, IWARPPort: -1, Out: &srvOut}, cfg)
	if err != nil || serr != nil {
		t.Fatalf("client %v\nserver %v", err, serr)
	}
	if !res.Check.OK() || res.Raw != nil || sres.Raw != nil || strings.Contains(cliOut.String()+srvOut.String(), "raw tcp") {
		t.Errorf("check %+v, raw %+v / %+v\n%s", res.Check, res.Raw, sres.Raw, cliOut.String())
	}
}

// TestIWARPClientNoServer: a client that finds no server fails within its
// dial retry, saying where it tried.
func TestIWARPClientNoServer(t *testing.T) {
	l, err := net.Listen("tcp", netip.AddrPortFrom(iwServerAddr, 0).String())
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close() // nobody listens there now
	start := time.Now()
	_, err = Run(testCtx(t), Config{IWARP: true, Server: iwServerAddr.String(), Addr: iwClientAddr, Port: port,
		DialRetry: 300 * time.Millisecond})
	took := time.Since(start)
	want := fmt.Sprintf("connect to %v", netip.AddrPortFrom(iwServerAddr, uint16(port)))
	if !errors.Is(err, syscall.ECONNREFUSED) || !strings.Contains(err.Error(), want) {
		t.Fatalf("%v, want a refused connection to %s", err, want)
	}
	if took < 300*time.Millisecond || took > 5*time.Second {
		t.Errorf("gave up after %v, want the 300ms retry", took)
	}
}

// TestIWARPTransportMismatch: a server and a client of different
// transports both fail, saying how to start the server.
func TestIWARPTransportMismatch(t *testing.T) {
	ctx := testCtx(t)
	// An iWARP server, a RoCEv2 client (on an in-process link).
	_, b := transport.NewPipe()
	_, _, serr, err := runRoles(t, ctx, Config{IWARP: true, IWARPPort: -1},
		Config{Op: OpWrite, Iters: 10, Link: b})
	if !errors.Is(serr, ErrConfig) || !errors.Is(err, ErrPeer) || !strings.Contains(err.Error(), "without --iwarp") {
		t.Errorf("iWARP server: %v; RoCE client: %v", serr, err)
	}
	// A RoCEv2 server, an iWARP client.
	a, _ := transport.NewPipe()
	_, _, serr, err = runRoles(t, ctx, Config{Link: a}, Config{IWARP: true, Op: OpWrite, Iters: 10})
	if !errors.Is(serr, ErrConfig) || !errors.Is(err, ErrPeer) || !strings.Contains(err.Error(), "with --iwarp too") {
		t.Errorf("RoCE server: %v; iWARP client: %v", serr, err)
	}
}

// TestIWARPServerCancel: a server waiting for its client stops on
// cancellation.
func TestIWARPServerCancel(t *testing.T) {
	l, err := net.Listen("tcp", netip.AddrPortFrom(iwServerAddr, 0).String())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := Run(ctx, Config{IWARP: true, Serve: true, Addr: iwServerAddr, Listener: l})
		errc <- err
	}()
	// The listener is up already: the server waits in Accept, or is about to.
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("server: %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not stop")
	}
}

func TestIWARPConfigErrors(t *testing.T) {
	a, _ := transport.NewPipe()
	pw, err := pcap.NewWriter(&bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"server with a link", Config{IWARP: true, Serve: true, Link: a}, "no link"},
		{"client with a pcap", Config{IWARP: true, Server: "127.0.7.2", Pcap: pw}, "no pcap"},
		{"CM port", Config{IWARP: true, Serve: true, IWARPPort: 70000}, "iWARP port"},
		{"client with a server TAP", Config{IWARP: true, Server: "10.77.0.1",
			TAP: &tapnic.Config{TAP: "tapC", Prefixes: prefixes("10.77.0.2/24")}, ServerTAP: &tapnic.Config{TAP: "tapS", Prefixes: prefixes("10.77.0.1/24")}}, "second TAP"},
		{"client op", Config{IWARP: true, Server: "127.0.7.2", Op: "flush"}, `op "flush"`},
	} {
		_, err := Run(context.Background(), c.cfg)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrConfig saying %q", c.name, err, c.want)
		}
	}
}

// TestIWARPTAPTwoProcesses: in the TAP mode each role opens its NIC on its
// TAP and both the side channel and the iWARP connection go through the
// NIC (the fake's side channel is its own, its streams kernel TCP, hence
// loopback prefixes); FPDUs are sized for the TAP's Ethernet, the raw
// baseline is skipped, each NIC is closed once.
func TestIWARPTAPTwoProcesses(t *testing.T) {
	for _, c := range []struct {
		op   Op
		mode Mode
	}{{OpSend, ModeBW}, {OpWrite, ModeLat}} {
		t.Run(string(c.op)+" "+string(c.mode), func(t *testing.T) {
			f := newFakeTAPs(t, "tapS", "tapC")
			ctx := testCtx(t)
			var srvOut, cliOut bytes.Buffer
			srvErr := make(chan error, 1)
			go func() {
				_, err := Run(ctx, Config{IWARP: true, Serve: true, Out: &srvOut,
					TAP: &tapnic.Config{TAP: "tapS", MTU: 9000, Prefixes: prefixes("127.0.7.2/8")}})
				srvErr <- err
			}()
			cfg := Config{IWARP: true, Op: c.op, Mode: c.mode, Size: 3000, Iters: 100, RxDepth: 8, Server: "127.0.7.2", Out: &cliOut,
				TAP: &tapnic.Config{TAP: "tapC", Prefixes: prefixes("127.0.7.3/8")}}
			res, err := Run(ctx, cfg)
			if err != nil {
				t.Fatalf("client: %v\n%s", err, cliOut.String())
			}
			if err := <-srvErr; err != nil {
				t.Fatalf("server: %v\n%s", err, srvOut.String())
			}
			checkTAPResult(t, cfg, res, cliOut.String())
			if !strings.HasSuffix(srvOut.String(), "raw baseline: skipped in TAP mode\n") {
				t.Errorf("server's report:\n%s", srvOut.String())
			}
			if res.MTU != 1420 {
				t.Errorf("MSS %d, want 1420 (1500 less IPv4, TCP and its options) for the client's 1500-byte IPv4 TAP", res.MTU)
			}
			if f.Closes("tapS") != 1 || f.Closes("tapC") != 1 {
				t.Errorf("NICs closed %d and %d times", f.Closes("tapS"), f.Closes("tapC"))
			}
		})
	}
}

// TestIWARPTAPCancel: a TAP-mode iWARP server waiting for its client
// stops on cancellation and closes its NIC.
func TestIWARPTAPCancel(t *testing.T) {
	f := newFakeTAPs(t, "tapS", "tapC")
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := Run(ctx, Config{IWARP: true, Serve: true, TAP: &tapnic.Config{TAP: "tapS", Prefixes: prefixes("127.0.7.2/8")}})
		errc <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		n := f.Listeners()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the server never listened")
		}
	}
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("server: %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not stop")
	}
	if f.Closes("tapS") != 1 {
		t.Errorf("NIC closed %d times", f.Closes("tapS"))
	}
}

// String is what was written so far.
func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestKernelMSS: the MSS of a kernel TCP connection is read from the
// socket; other connections have none.
func TestKernelMSS(t *testing.T) {
	l, err := net.Listen("tcp", netip.AddrPortFrom(iwServerAddr, 0).String())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if m := kernelMSS(c); m < 536 || m > 65535 {
		t.Errorf("MSS %d", m)
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if m := kernelMSS(a); m != 0 {
		t.Errorf("a pipe's MSS %d", m)
	}
}

// FuzzQPIndexOf: a connection request's private data, from the wire,
// names a QP in range or is refused; it never panics.
func FuzzQPIndexOf(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1}, 2)
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, 1024)
	f.Add([]byte{0, 0, 1}, 1)
	f.Fuzz(func(t *testing.T, pd []byte, n int) {
		n = n&1023 + 1
		i, err := qpIndexOf(pd, n)
		if err == nil && (len(pd) != 4 || i < 0 || i >= n) {
			t.Fatalf("qpIndexOf(%x, %d) = %d", pd, n, i)
		}
	})
}
