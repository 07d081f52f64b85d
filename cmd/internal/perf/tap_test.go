package perf

import (
	"bytes"
	"context"
	"errors"
	"net/netip"
	"strings"
	"sync"
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

// checkTAPResult checks a TAP-mode run: figures, data, and the raw
// baseline skipped, in the result and in the report.
func checkTAPResult(t *testing.T, cfg Config, res *Result, out string) {
	t.Helper()
	if !res.Check.OK() {
		t.Errorf("data check: %+v", res.Check)
	}
	if cfg.Mode == ModeLat && (res.Lat == nil || res.Lat.Samples != cfg.Iters) ||
		cfg.Mode != ModeLat && (res.BW == nil || res.BW.Ops != int64(cfg.Iters)) {
		t.Errorf("figures %+v %+v", res.BW, res.Lat)
	}
	if res.Raw != nil || res.RawSkipped != "TAP mode" || !strings.HasSuffix(out, "raw baseline: skipped in TAP mode\n") {
		t.Errorf("raw %+v %q; report:\n%s", res.Raw, res.RawSkipped, out)
	}
}

// TestTAPTwoProcesses runs a TAP-mode server and client, one role each as
// two processes would, over fake TAPs with IPv6 addresses only: the side
// channel goes through the NICs' own stack (the kernel has none of these
// addresses) and the keys carry the IPv6 GIDs.
func TestTAPTwoProcesses(t *testing.T) {
	for _, c := range []struct {
		op   Op
		mode Mode
	}{{OpWrite, ModeBW}, {OpSend, ModeLat}, {OpRead, ModeBW}} {
		t.Run(string(c.op)+" "+string(c.mode), func(t *testing.T) {
			f := newFakeTAPs(t, "tapS", "tapC")
			ctx := testCtx(t)
			var srvOut, cliOut bytes.Buffer
			srvErr := make(chan error, 1)
			go func() {
				_, err := Run(ctx, Config{Serve: true, Out: &srvOut,
					TAP: &tapnic.Config{TAP: "tapS", Prefixes: prefixes("fd00:77::1/64")}})
				srvErr <- err
			}()
			cfg := Config{Op: c.op, Mode: c.mode, Size: 3000, Iters: 100, Server: "fd00:77::1", Out: &cliOut,
				TAP: &tapnic.Config{TAP: "tapC", Prefixes: prefixes("fd00:77::2/64")}}
			res, err := Run(ctx, cfg)
			if err != nil {
				t.Fatalf("client: %v\n%s", err, cliOut.String())
			}
			if err := <-srvErr; err != nil {
				t.Fatalf("server: %v\n%s", err, srvOut.String())
			}
			checkTAPResult(t, cfg, res, cliOut.String())
			// The default path MTU is the largest the TAP's 1500 allows.
			if res.MTU != 1024 || !strings.Contains(cliOut.String(), "Mtu             : 1024[B]") {
				t.Errorf("MTU %d", res.MTU)
			}
			v6 := netip.MustParseAddr("fd00:77::2").As16()
			// Index 0 is the link-local GID, as on Linux; the address is 1.
			if res.Client[0].GID != v6 || res.GIDIndex != 1 {
				t.Errorf("client key GID %v (index %d), want fd00:77::2 (index 1)", netip.AddrFrom16(res.Client[0].GID), res.GIDIndex)
			}
			if f.Closes("tapS") != 1 || f.Closes("tapC") != 1 {
				t.Errorf("NICs closed %d and %d times", f.Closes("tapS"), f.Closes("tapC"))
			}
		})
	}
}

// TestTAPRDMACM runs rdma_cm mode (-R) between a TAP-mode server and
// client, as two processes would: each NIC's device offers rdma_cm on its
// QP1 (the CM's MADs cross the fake TAPs), and each NIC closes once.
func TestTAPRDMACM(t *testing.T) {
	noSettle(t)
	f := newFakeTAPs(t, "tapS", "tapC")
	ctx := testCtx(t)
	var srvOut, cliOut bytes.Buffer
	srvErr := make(chan error, 1)
	go func() {
		_, err := Run(ctx, Config{Serve: true, RDMACM: true, Op: OpWrite, Mode: ModeBW, Size: 3000, Iters: 100, Out: &srvOut,
			TAP: &tapnic.Config{TAP: "tapS", Prefixes: prefixes("10.77.0.1/24")}})
		srvErr <- err
	}()
	cfg := Config{RDMACM: true, Op: OpWrite, Mode: ModeBW, Size: 3000, Iters: 100, Server: "10.77.0.1", Out: &cliOut,
		TAP: &tapnic.Config{TAP: "tapC", Prefixes: prefixes("10.77.0.2/24")}}
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("client: %v\n%s", err, cliOut.String())
	}
	if err := <-srvErr; err != nil {
		t.Fatalf("server: %v\n%s", err, srvOut.String())
	}
	if !res.RDMACM || res.Check.Skipped != skippedCM || res.BW == nil || res.BW.Ops != int64(cfg.Iters) {
		t.Errorf("result: rdma_cm %v, check %+v, figures %+v", res.RDMACM, res.Check, res.BW)
	}
	if g := netip.AddrFrom16(res.Server[0].GID).Unmap(); g != netip.MustParseAddr("10.77.0.1") {
		t.Errorf("server record's GID %v", g)
	}
	if f.Closes("tapS") != 1 || f.Closes("tapC") != 1 {
		t.Errorf("NICs closed %d and %d times", f.Closes("tapS"), f.Closes("tapC"))
	}
}

// TestTAPOneProcess: both sides in one process need two TAPs; with
// dual-stack NICs and the client's IPv6 address the QPs send from GID
// index 1, and the client's pcap and the trace go to the TAP NICs.
func TestTAPOneProcess(t *testing.T) {
	f := newFakeTAPs(t, "tapS", "tapC")
	pw, err := pcap.NewWriter(&bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	trace := &lockedBuffer{}
	cfg := Config{Op: OpAtomic, Mode: ModeBW, Iters: 100, Out: &out, Pcap: pw, Trace: trace,
		Addr:      netip.MustParseAddr("fd00:77::2"),
		TAP:       &tapnic.Config{TAP: "tapC", Prefixes: prefixes("10.77.0.2/24", "fd00:77::2/64")},
		ServerTAP: &tapnic.Config{TAP: "tapS", Prefixes: prefixes("10.77.0.1/24", "fd00:77::1/64")}}
	res, err := Run(testCtx(t), cfg)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	checkTAPResult(t, cfg, res, out.String())
	// Link-local, IPv4, IPv6: the IPv6 address is index 2.
	if res.GIDIndex != 2 || !strings.Contains(out.String(), "GID index       : 2\n") {
		t.Errorf("GID index %d\n%s", res.GIDIndex, out.String())
	}
	if res.Server[0].GID != netip.MustParseAddr("fd00:77::1").As16() {
		t.Errorf("server key GID %v", netip.AddrFrom16(res.Server[0].GID))
	}
	if c := f.Opened("tapC"); c.Pcap != pw || c.Trace != trace || c.Name != "rnic1" {
		t.Errorf("client NIC opened with %+v", c)
	}
	if s := f.Opened("tapS"); s.Pcap != nil || s.Trace != trace || s.Name != "rnic0" {
		t.Errorf("server NIC opened with %+v", s)
	}
	if pw.Frames() == 0 {
		t.Error("nothing captured")
	}
}

// TestTAPIWARP: iWARP in the TAP mode runs both sides in this process on
// the two NICs' streams, with FPDUs sized for the TAPs' Ethernet. (The
// fake's streams are kernel TCP, hence loopback addresses.)
func TestTAPIWARP(t *testing.T) {
	newFakeTAPs(t, "tapS", "tapC")
	var out bytes.Buffer
	cfg := Config{IWARP: true, Op: OpWrite, Mode: ModeLat, Size: 2000, Iters: 50, Out: &out,
		TAP:       &tapnic.Config{TAP: "tapC", Prefixes: prefixes("127.0.0.3/8")},
		ServerTAP: &tapnic.Config{TAP: "tapS", Prefixes: prefixes("127.0.0.2/8")}}
	res, err := Run(testCtx(t), cfg)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	checkTAPResult(t, cfg, res, out.String())
	if res.MTU != 1420 {
		t.Errorf("MSS %d, want 1420 (1500 less IPv4, TCP and its options) for a 1500-byte IPv4 TAP", res.MTU)
	}
}

// TestTAPCancel: a TAP-mode server waiting for its client stops on
// cancellation and closes its NIC.
func TestTAPCancel(t *testing.T) {
	f := newFakeTAPs(t, "tapS", "tapC")
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := Run(ctx, Config{Serve: true, TAP: &tapnic.Config{TAP: "tapS", Prefixes: prefixes("10.77.0.1/24")}})
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

func TestTAPConfigErrors(t *testing.T) {
	tap := func(name string, p ...string) *tapnic.Config {
		return &tapnic.Config{TAP: name, Prefixes: prefixes(p...)}
	}
	a, _ := transport.NewPipe()
	for _, c := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"one process, one TAP", Config{TAP: tap("tapC", "10.77.0.2/24")}, "two NICs"},
		{"one process, server TAP only", Config{ServerTAP: tap("tapS", "10.77.0.1/24")}, "two NICs"},
		{"iWARP, one TAP", Config{IWARP: true, TAP: tap("tapC", "10.77.0.2/24")}, "two NICs"},
		{"server TAP with --serve", Config{Serve: true, TAP: tap("tapS", "10.77.0.1/24"), ServerTAP: tap("tapT", "10.77.0.3/24")}, "second TAP"},
		{"server TAP for a client", Config{Server: "10.77.0.1", TAP: tap("tapC", "10.77.0.2/24"), ServerTAP: tap("tapS", "10.77.0.1/24")}, "second TAP"},
		{"no prefixes", Config{Serve: true, TAP: &tapnic.Config{TAP: "tapS"}}, "no address"},
		{"no TAP name", Config{Serve: true, TAP: &tapnic.Config{Prefixes: prefixes("10.77.0.1/24")}}, "name"},
		{"with a link", Config{Serve: true, Link: a, TAP: tap("tapS", "10.77.0.1/24")}, "own links"},
		{"path MTU 4096 on 1500", Config{Server: "10.77.0.1", MTU: 4096, TAP: tap("tapC", "10.77.0.2/24")}, "does not fit"},
		{"IPv6 server, IPv4 NIC", Config{Server: "fd00::1", TAP: tap("tapC", "10.77.0.2/24")}, "family"},
		{"address not the NIC's", Config{Server: "10.77.0.1", Addr: netip.MustParseAddr("10.77.0.9"), TAP: tap("tapC", "10.77.0.2/24")}, "not one of"},
		{"server address not its NIC's", Config{ServerAddr: netip.MustParseAddr("10.77.0.9"),
			TAP: tap("tapC", "10.77.0.2/24"), ServerTAP: tap("tapS", "10.77.0.1/24")}, "not one of"},
	} {
		_, err := Run(context.Background(), c.cfg)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrConfig saying %q", c.name, err, c.want)
		}
	}
	// A jumbo TAP allows path MTU 4096, and takes it by default.
	r, err := Config{Server: "10.77.0.1", TAP: &tapnic.Config{TAP: "tapC", MTU: 9000, Prefixes: prefixes("10.77.0.2/24")}}.resolve(context.Background())
	if err != nil || r.MTU != 4096 || r.Addr != netip.MustParseAddr("10.77.0.2") {
		t.Errorf("jumbo TAP: %v %v", r, err)
	}
}

// lockedBuffer is a trace two NICs write to from their own goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
