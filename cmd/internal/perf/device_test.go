package perf

// Runs on a device of another backend, opened by its string: a fake rnicd
// backend registered for the test serves embedded NICs on loopback
// addresses behind a type of its own, so perf sees what it would see of
// rnicd's NIC: no local NIC, memory from AllocBuffer, and (if asked) the
// device's own network for the side channel.

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/rnic/rnic/transport/pcap"
	"github.com/rnic/rnic/transport/porttest"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
	"github.com/rnic/rnic/transport"
)

// deviceTestPort is the RoCEv2 port of the fake backend's NICs.
const deviceTestPort = 24796

// deviceLinkMTU is their Ethernet MTU: an active MTU of 2048, below the
// embedded mode's 4096, so that a run shows whose port it uses.
const deviceLinkMTU = 2200

// installFakeBackend registers a fake rnicd backend serving rnic2 on
// 127.0.0.2 and rnic3 on 127.0.0.3, until the test ends.
func installFakeBackend(t *testing.T, withNet bool) *rnicdtest.FakeBackend {
	t.Helper()
	return rnicdtest.InstallFakeBackend(t, rnicdtest.FakeConfig{Port: deviceTestPort, MTU: deviceLinkMTU, Net: withNet})
}

const fakeDev2, fakeDev3 = "rnic2@/run/fake.sock", "rnic3@/run/fake.sock"

// TestOnOneDevice: both sides in one process on the one device -d names,
// their QPs talking through its port: every operation's figures are sane,
// the data moved, the path MTU is the port's (2048, not the embedded
// mode's 4096), the memory comes from the device, the raw baseline runs
// on the kernel between the device's address and itself, and the device
// is opened and closed once.
func TestOnOneDevice(t *testing.T) {
	for _, cfg := range []Config{
		{Op: OpWrite, Mode: ModeBW, Size: 10000, QPs: 2, Iters: 200, TxDepth: 16, CQMod: 4},
		{Op: OpWrite, Mode: ModeLat, Size: 64, Iters: 200},
		{Op: OpRead, Mode: ModeBW, Size: 5000, Iters: 200},
		{Op: OpSend, Mode: ModeLat, Size: 3000, Iters: 200},
		{Op: OpAtomic, Mode: ModeBW, AtomicType: CmpAndSwap, Iters: 200},
		{Op: OpSend, Mode: ModeBW, UD: true, Size: 1000, Iters: 200, QPs: 2},
	} {
		t.Run(fmt.Sprintf("%s %s ud=%v", cfg.Op, cfg.Mode, cfg.UD), func(t *testing.T) {
			f := installFakeBackend(t, false)
			var out bytes.Buffer
			cfg.IBDev, cfg.Out = fakeDev2, &out
			res, err := Run(testCtx(t), cfg)
			if err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			checkResult(t, cfg, res)
			if res.MTU != 2048 {
				t.Errorf("path MTU %d, want the port's active 2048", res.MTU)
			}
			if g := res.Client[0].GID; netip.AddrFrom16(g).Unmap() != netip.MustParseAddr("127.0.0.2") || res.Server[0].GID != g {
				t.Errorf("GIDs %v and %v, want both the device's", res.Client[0].GID, res.Server[0].GID)
			}
			c := f.Counts()
			opens, allocs, closes := c.Opens, c.Allocs, c.Closes
			if opens != 1 || closes != 1 || allocs != 2 {
				t.Errorf("device opened %d times, closed %d, %d buffers from it; want 1, 1, 2", opens, closes, allocs)
			}
		})
	}
}

// TestOnTwoDevices: a server and a client as two processes would run
// them, each on its device, the side channel through the devices' own
// network (so the raw baseline, the kernel's, is skipped).
func TestOnTwoDevices(t *testing.T) {
	f := installFakeBackend(t, true)
	ctx := testCtx(t)
	port, err := porttest.FreePort() // the server listens through its device
	if err != nil {
		t.Fatal(err)
	}
	var srvOut, cliOut bytes.Buffer
	type ret struct {
		res *Result
		err error
	}
	srv := make(chan ret, 1)
	go func() {
		res, err := Run(ctx, Config{Serve: true, IBDev: fakeDev2, Port: port, Out: &srvOut})
		srv <- ret{res, err}
	}()
	cfg := Config{Op: OpWrite, Mode: ModeBW, Size: 4096, Iters: 300, MTU: 1024,
		IBDev: fakeDev3, Server: "127.0.0.2", Port: port, Out: &cliOut}
	res, err := Run(ctx, cfg)
	s := <-srv
	if err != nil || s.err != nil {
		t.Fatalf("client %v\n%s\nserver %v\n%s", err, cliOut.String(), s.err, srvOut.String())
	}
	if !res.Check.OK() || res.Check.Bytes == 0 || res.BW == nil || res.BW.AvgMBps <= 0 {
		t.Errorf("result %+v", res)
	}
	if res.Raw != nil || res.RawSkipped != "a run on the device's own network" ||
		!strings.Contains(cliOut.String(), "raw baseline: skipped in a run on the device's own network") {
		t.Errorf("raw %+v %q; report:\n%s", res.Raw, res.RawSkipped, cliOut.String())
	}
	if got := netip.AddrFrom16(res.Client[0].GID).Unmap().String(); got != "127.0.0.3" {
		t.Errorf("client GID %s, want its device's 127.0.0.3", got)
	}
	c := f.Counts()
	opens, allocs, listens, closes := c.Opens, c.Allocs, c.Listens, c.Closes
	if opens != 2 || closes != 2 || allocs != 2 || listens != 1 {
		t.Errorf("%d opens, %d closes, %d buffers, %d listens; want 2, 2, 2, 1", opens, closes, allocs, listens)
	}
}

// TestDeviceConfigErrors: what belongs to a NIC of this process is refused
// with a device of another backend, as is what its port cannot carry, and
// a backend not linked in says so.
func TestDeviceConfigErrors(t *testing.T) {
	installFakeBackend(t, false)
	pw, err := pcap.NewWriter(&bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := transport.NewPipe()
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{IBDev: fakeDev2, Pcap: pw}, "a capture is for a NIC of this process"},
		{Config{IBDev: fakeDev2, ServerLink: a}, "a link"},
		{Config{IBDev: fakeDev2, RDMACM: true}, "-R needs rdma_cm, which device rnic2@/run/fake.sock does not offer"},
		{Config{IBDev: fakeDev2, IWARP: true}, "iWARP"},
		{Config{IBDev: fakeDev2, MTU: 4096}, "path MTU 4096 does not fit device rnic2@/run/fake.sock's port (at most 2048)"},
		{Config{IBDev: fakeDev2, Addr: netip.MustParseAddr("127.0.0.9")}, "not one of device rnic2@/run/fake.sock's"},
		{Config{IBDev: fakeDev2, ServerAddr: netip.MustParseAddr("127.0.0.3")}, "both sides run on device"},
		{Config{IBDev: "a:b"}, "bad device name"},
	} {
		_, err := Run(testCtx(t), c.cfg)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want ErrConfig saying %q", c.cfg, err, c.want)
		}
	}
	if _, err := Run(testCtx(t), Config{IBDev: "verbs:rxe0"}); !errors.Is(err, ibv.ErrNoBackend) {
		t.Errorf("verbs:rxe0 without the backend: %v", err)
	}
}
