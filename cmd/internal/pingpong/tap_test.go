package pingpong

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/rnic/rnic/nic/tapnic"
	"github.com/rnic/rnic/transport"
	"github.com/rnic/rnic/transport/pcap"
)

func prefixes(s ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, p := range s {
		out = append(out, netip.MustParsePrefix(p))
	}
	return out
}

// runTAPPair runs a TAP-mode server and client over fake TAPs, the way a
// test with real TAPs runs them: two Configs that differ only in TAP and
// Server, and one context.
func runTAPPair(t *testing.T, f *fakeTAPs, srvTAP, cliTAP *tapnic.Config, server string, cfg Config) (srv, cli *sideResult) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv, cli = &sideResult{}, &sideResult{}
	s, c := cfg, cfg
	s.TAP, s.Out = srvTAP, &srv.out
	c.TAP, c.Out, c.Server = cliTAP, &cli.out, server
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.res, srv.err = Run(ctx, s)
	}()
	cli.res, cli.err = Run(ctx, c)
	<-done
	if srv.err != nil || cli.err != nil {
		t.Fatalf("server: %v\n%s\nclient: %v\n%s", srv.err, srv.out.String(), cli.err, cli.out.String())
	}
	if f.Closes(srvTAP.TAP) != 1 || f.Closes(cliTAP.TAP) != 1 {
		t.Errorf("NICs closed %d and %d times, want once each", f.Closes(srvTAP.TAP), f.Closes(cliTAP.TAP))
	}
	return srv, cli
}

// TestRunTAPIPv6Only: NICs with only IPv6 addresses work end to end: the
// side channel runs over IPv6 through the NICs' own stack (the fake's
// addresses exist nowhere in the kernel) and the GIDs are the IPv6
// addresses.
func TestRunTAPIPv6Only(t *testing.T) {
	f := newFakeTAPs(t, "tapS", "tapC")
	srvTAP := &tapnic.Config{TAP: "tapS", Prefixes: prefixes("fd00:77::1/64")}
	cliTAP := &tapnic.Config{TAP: "tapC", Prefixes: prefixes("fd00:77::2/64")}
	cfg := Config{Size: 256, Iters: 50, GIDIndex: 1, Check: true} // -g 1, as on rxe (0 is link-local)
	srv, cli := runTAPPair(t, f, srvTAP, cliTAP, "fd00:77::1", cfg)
	if re := linesRE("fd00:77::1", "fd00:77::2", 256, 50); !re.MatchString(srv.out.String()) {
		t.Errorf("server output does not match %s:\n%s", re, srv.out.String())
	}
	if re := linesRE("fd00:77::2", "fd00:77::1", 256, 50); !re.MatchString(cli.out.String()) {
		t.Errorf("client output does not match %s:\n%s", re, cli.out.String())
	}
	// The NIC got the tool's name; a TAP config's own settings are kept.
	if got := f.Opened("tapS"); got.Name != "rnic0" || got.TAP != "tapS" {
		t.Errorf("server NIC opened with %+v", got)
	}
}

// TestRunTAPPcapAndTrace: in the TAP mode the tool's pcap and trace go to
// the TAP NIC.
func TestRunTAPPcapAndTrace(t *testing.T) {
	f := newFakeTAPs(t, "tapS", "tapC")
	pw, err := pcap.NewWriter(&bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	var trace bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := Run(ctx, Config{Iters: 10, Size: 64, IBDev: "mlx", TAP: &tapnic.Config{TAP: "tapS", Prefixes: prefixes("10.77.0.1/24")}})
		errc <- err
	}()
	_, err = Run(ctx, Config{Iters: 10, Size: 64, Server: "10.77.0.1", Pcap: pw, Trace: &trace,
		TAP: &tapnic.Config{TAP: "tapC", Prefixes: prefixes("10.77.0.2/24")}})
	if err != nil || <-errc != nil {
		t.Fatalf("client %v", err)
	}
	if got := f.Opened("tapC"); got.Pcap != pw || got.Trace != &trace {
		t.Errorf("client NIC opened without the pcap and trace: %+v", got)
	}
	if pw.Frames() == 0 || trace.Len() == 0 {
		t.Errorf("%d frames captured, %d bytes of trace", pw.Frames(), trace.Len())
	}
	if f.Opened("tapS").Name != "mlx" {
		t.Errorf("server NIC named %q, want -d's mlx", f.Opened("tapS").Name)
	}
}

// TestRunTAPDualStack: a dual-stack server reached over IPv6 by a
// dual-stack client, without -g (no GID in the messages): the server
// listens on every address of its NIC, and each QP sends from its NIC's
// IPv6 GID (index 1), which the run could not complete otherwise.
func TestRunTAPDualStack(t *testing.T) {
	f := newFakeTAPs(t, "tapS", "tapC")
	srvTAP := &tapnic.Config{TAP: "tapS", Prefixes: prefixes("10.77.0.1/24", "fd00:77::1/64")}
	cliTAP := &tapnic.Config{TAP: "tapC", Prefixes: prefixes("10.77.0.2/24", "fd00:77::2/64")}
	srv, cli := runTAPPair(t, f, srvTAP, cliTAP, "fd00:77::1", Config{Size: 100, Iters: 20, GIDIndex: -1})
	if re := linesRE("::", "::", 100, 20); !re.MatchString(srv.out.String()) || !re.MatchString(cli.out.String()) {
		t.Errorf("outputs:\n%s%s", srv.out.String(), cli.out.String())
	}
}

// TestRunTAPCancel: a TAP-mode server waiting for its client stops when
// the context is cancelled (SIGINT in the command) and closes its NIC.
func TestRunTAPCancel(t *testing.T) {
	f := newFakeTAPs(t, "tapS", "tapC")
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := Run(ctx, Config{TAP: &tapnic.Config{TAP: "tapS", Prefixes: prefixes("10.77.0.1/24")}})
		errc <- err
	}()
	// The server is waiting once its listener exists.
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

// TestRunTAPDialRetry: a client started before its server retries the
// NIC's "refused" (not ECONNREFUSED) until the server listens, and gives
// up after DialRetry when none does.
func TestRunTAPDialRetry(t *testing.T) {
	f := newFakeTAPs(t, "tapS", "tapC")
	start := time.Now()
	_, err := Run(context.Background(), Config{Server: "10.77.0.1", DialRetry: 200 * time.Millisecond,
		TAP: &tapnic.Config{TAP: "tapC", Prefixes: prefixes("10.77.0.2/24")}})
	if !errors.Is(err, errRefused) || time.Since(start) < 200*time.Millisecond {
		t.Errorf("after %v: %v, want the refusal after retrying", time.Since(start), err)
	}
	if f.Closes("tapC") != 1 {
		t.Errorf("NIC closed %d times", f.Closes("tapC"))
	}
}

func TestTAPConfigErrors(t *testing.T) {
	v4 := &tapnic.Config{TAP: "tapX", Prefixes: prefixes("10.77.0.1/24")}
	for _, c := range []struct {
		name string
		cfg  Config
	}{
		{"no prefixes", Config{TAP: &tapnic.Config{TAP: "tapX"}}},
		{"no name", Config{TAP: &tapnic.Config{Prefixes: prefixes("10.77.0.1/24")}}},
		{"with a link", Config{TAP: v4, Link: func() transport.Endpoint { a, _ := transport.NewPipe(); return a }()}},
		{"with a listener", Config{TAP: v4, Listener: &net.TCPListener{}}},
		{"path MTU over the TAP's 1500", Config{TAP: v4, MTU: 2048}},
		{"path MTU over a 1100 TAP", Config{TAP: &tapnic.Config{TAP: "tapX", MTU: 1100, Prefixes: prefixes("10.77.0.1/24")}}},
		{"address not the NIC's", Config{TAP: v4, Addr: netip.MustParseAddr("10.77.0.9")}},
		{"IPv6 server, IPv4 NIC", Config{TAP: v4, Server: "fd00::1"}},
		{"address of the wrong family", Config{TAP: &tapnic.Config{TAP: "tapX", Prefixes: prefixes("10.77.0.2/24", "fd00::2/64")},
			Server: "fd00::1", Addr: netip.MustParseAddr("10.77.0.2")}},
	} {
		if _, err := Run(context.Background(), c.cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: %v, want ErrConfig", c.name, err)
		}
	}
	// A path MTU that fits a jumbo TAP is fine as far as the configuration
	// goes.
	r, err := Config{MTU: 4096, TAP: &tapnic.Config{TAP: "tapX", MTU: 9000, Prefixes: prefixes("10.77.0.1/24")}}.resolve(context.Background())
	if err != nil || r.Addr != netip.MustParseAddr("10.77.0.1") || !r.anyAddr {
		t.Errorf("jumbo TAP: %+v %v", r, err)
	}
}
