package pingpong

// Runs on a device of another backend, opened by its string: a fake rnicd
// backend registered for the test serves embedded NICs on loopback
// addresses behind a type of its own, so the tool sees what it would see
// of rnicd's NIC: no local NIC, memory from AllocBuffer, and (if asked)
// the device's own network for the side channel.

import (
	"bytes"
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/rnic/rnic/transport/pcap"
	"github.com/rnic/rnic/transport/porttest"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
	"github.com/rnic/rnic/transport"
)

// installFakeBackend registers a fake rnicd backend serving rnic2 on
// 127.0.0.2 and rnic3 on 127.0.0.3, until the test ends.
func installFakeBackend(t *testing.T, withNet bool) *rnicdtest.FakeBackend {
	t.Helper()
	return rnicdtest.InstallFakeBackend(t, rnicdtest.FakeConfig{Port: deviceTestPort, MTU: 1500, Net: withNet})
}

// deviceTestPort is the RoCEv2 port of the fake backend's NICs.
const deviceTestPort = 24795

// freeTCPPort is a TCP port that was free a moment ago, below the
// ephemeral range: the server listens on all addresses, which a parallel
// test's connection holding the port as its source port would refuse.
func freeTCPPort(t *testing.T) int {
	t.Helper()
	p, err := porttest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// runDevicePair runs a server on rnic2 and a client on rnic3, both served
// by the fake backend, with the side channel on port.
func runDevicePair(t *testing.T, cfg Config) (srv, cli *sideResult) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv, cli = &sideResult{}, &sideResult{}
	s, c := cfg, cfg
	s.IBDev, s.Out = "rnic2@/run/fake.sock", &srv.out
	c.IBDev, c.Out, c.Server = "rnic3@/run/fake.sock", &cli.out, "127.0.0.2"
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.res, srv.err = Run(ctx, s)
	}()
	cli.res, cli.err = Run(ctx, c)
	<-done
	return srv, cli
}

// TestRunOnDevice: both sides on devices opened by their strings. The
// buffers come from the devices, the side channel from the device's
// network when it has one (else kernel TCP from the NIC's address), the
// GIDs from the devices' tables, and each device is closed once.
func TestRunOnDevice(t *testing.T) {
	for _, c := range []struct {
		name    string
		withNet bool
		cfg     Config
	}{
		{name: "kernel TCP, chk", cfg: Config{Size: 5000, Iters: 50, Check: true}},
		{name: "kernel TCP, no GID", cfg: Config{Size: 64, Iters: 50, GIDIndex: -1}},
		{name: "device network, events", withNet: true, cfg: Config{Size: 4096, Iters: 50, Events: true}},
		{name: "device network, UD", withNet: true, cfg: Config{UD: true, Size: 1024, Iters: 50, Check: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := installFakeBackend(t, c.withNet)
			c.cfg.Port, c.cfg.MTU = freeTCPPort(t), 1024
			srv, cli := runDevicePair(t, c.cfg)
			if c.cfg.GIDIndex < 0 {
				if srv.err != nil || cli.err != nil {
					t.Fatalf("server %v\n%s\nclient %v\n%s", srv.err, srv.out.String(), cli.err, cli.out.String())
				}
				if re := linesRE("::", "::", c.cfg.Size, c.cfg.Iters); !re.MatchString(cli.out.String()) {
					t.Errorf("client output:\n%s", cli.out.String())
				}
			} else {
				checkPairOf(t, c.cfg.UD, srv, cli, c.cfg.Size, c.cfg.Iters)
			}
			n := f.Counts()
			allocs, listens, dials, closes := n.Allocs, n.Listens, n.Dials, n.Closes
			if allocs != 2 || closes != 2 {
				t.Errorf("%d buffers allocated on the devices and %d closes, want 2 and 2", allocs, closes)
			}
			// (A client may dial again while its server comes up.)
			if c.withNet && (listens != 1 || dials < 1) || !c.withNet && listens+dials != 0 {
				t.Errorf("the devices' network: %d listens, %d dials (has one: %v)", listens, dials, c.withNet)
			}
		})
	}
}

// TestDeviceConfigErrors: what belongs to a NIC of this process is refused
// with a device of another backend, an address must be the device's, and
// a backend not linked in says so.
func TestDeviceConfigErrors(t *testing.T) {
	installFakeBackend(t, false)
	pw, err := pcap.NewWriter(&bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	dev := "rnic2@/run/fake.sock"
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{IBDev: dev, Pcap: pw}, "a capture is for a NIC of this process"},
		{Config{IBDev: dev, Trace: &bytes.Buffer{}}, "a trace"},
		{Config{IBDev: dev, Link: nopLink{}}, "a link"},
		{Config{IBDev: dev, Addr: netip.MustParseAddr("127.0.0.9")}, "not one of device rnic2@/run/fake.sock's"},
		{Config{IBDev: "bad/name"}, "bad device name"},
	} {
		_, err := Run(context.Background(), c.cfg)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want ErrConfig saying %q", c.cfg, err, c.want)
		}
	}
	_, err = Run(context.Background(), Config{IBDev: "verbs:rxe0"})
	if !errors.Is(err, ibv.ErrNoBackend) {
		t.Errorf("verbs:rxe0 without the backend: %v", err)
	}
}

// nopLink is a link that is never used.
type nopLink struct{ transport.Endpoint }
