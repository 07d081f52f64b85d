package demo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/tapnic"
	"github.com/rnic/rnic/roce/wire"
	"github.com/rnic/rnic/transport"
	"github.com/rnic/rnic/transport/pcap"
	"github.com/rnic/rnic/transport/stream/kerneltcp"
	"github.com/rnic/rnic/transport/udp"
)

// fakeTAPs stands in for tapnic.Open: each TAP is an embedded NIC with
// every address of its Config on one end of an in-process link (iWARP
// streams are kernel TCP, so iWARP tests give loopback addresses). It
// records what each NIC was opened with and how often it was closed.
type fakeTAPs struct {
	mu     sync.Mutex
	links  map[string]embedded.Link
	opened map[string]tapnic.Config
	closed map[string]int
	macs   map[netip.Addr][6]byte // every address → its NIC's one MAC, as ARP/ND would find
}

func newFakeTAPs(t *testing.T, a, b string) *fakeTAPs {
	ea, eb := transport.NewPipe()
	f := &fakeTAPs{links: map[string]embedded.Link{a: ea, b: eb}, opened: map[string]tapnic.Config{}, closed: map[string]int{},
		macs: map[netip.Addr][6]byte{}}
	old := openTAP
	openTAP = f.open
	t.Cleanup(func() { openTAP = old })
	return f
}

type closeCounter struct {
	f    *fakeTAPs
	name string
	n    *embedded.NIC
}

func (c closeCounter) Close() error {
	c.f.mu.Lock()
	c.f.closed[c.name]++
	c.f.mu.Unlock()
	return c.n.Close()
}

func (f *fakeTAPs) open(cfg tapnic.Config) (*tapNIC, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	link, ok := f.links[cfg.TAP]
	if !ok {
		return nil, fmt.Errorf("fake: no TAP %q", cfg.TAP)
	}
	f.opened[cfg.TAP] = cfg
	addrs := make([]netip.Addr, len(cfg.Prefixes))
	mac := udp.SyntheticMAC(cfg.Prefixes[0].Addr())
	for i, p := range cfg.Prefixes {
		addrs[i] = p.Addr()
		f.macs[p.Addr()] = mac
	}
	n, err := embedded.NewNIC(embedded.Config{Name: cfg.Name, Addr: addrs[0], Addrs: addrs, MAC: mac,
		MTU: cfg.MTU, Link: link, Pcap: cfg.Pcap, Trace: cfg.Trace, UDPPort: wire.UDPPort,
		Resolve: func(a netip.Addr) ([6]byte, bool) {
			f.mu.Lock()
			defer f.mu.Unlock()
			m, ok := f.macs[a.Unmap()]
			return m, ok
		}})
	if err != nil {
		return nil, err
	}
	return &tapNIC{nic: n, streams: &kerneltcp.Network{}, closer: closeCounter{f, cfg.TAP, n}}, nil
}

func prefixes(s ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, p := range s {
		out = append(out, netip.MustParsePrefix(p))
	}
	return out
}

// TestDemoTAP runs the eight steps between two TAP-mode NICs with IPv4
// and IPv6 addresses over IPv6 (rnic1's first address): every QP sends
// from GID index 1, the narration's wire lines come from rnic0's capture
// point on its TAP, the user's capture gets every frame, and both NICs
// are closed.
func TestDemoTAP(t *testing.T) {
	f := newFakeTAPs(t, "tapA", "tapB")
	var out, capture bytes.Buffer
	pw, err := embedded.NewPcapWriter(&capture)
	if err != nil {
		t.Fatal(err)
	}
	err = Run(context.Background(), Config{Out: &out, Pcap: pw,
		TAPA: &tapnic.Config{TAP: "tapA", Prefixes: prefixes("10.77.0.1/24", "fd00:77::1/64")},
		TAPB: &tapnic.Config{TAP: "tapB", Prefixes: prefixes("fd00:77::2/64", "10.77.0.2/24")}})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	pw.Close()
	s := out.String()
	for _, want := range []string{"demo: 8 steps, 8 behaved as specified", "rnic0: address fd00:77::1",
		"wire: rnic0 -> rnic1  RC RDMA WRITE First", "wire: rnic1 -> rnic0  RC RDMA READ Response Last",
		"RC ATOMIC Acknowledge", "UD SEND Only", "NAK remote access error"} {
		if !strings.Contains(s, want) {
			t.Errorf("narration lacks %q", want)
		}
	}
	frames, err := pcap.ReadFrom(&capture)
	if err != nil {
		t.Fatal(err)
	}
	// Each frame appears once: rnic0's capture point sees what it sends
	// and what it receives.
	if n := strings.Count(s, "  wire: "); len(frames) != n || n < 20 {
		t.Errorf("%d frames captured, %d wire lines", len(frames), n)
	}
	for i, fr := range frames {
		var wf wire.Frame
		if err := wf.Decode(fr.Data, 0); err != nil || !wf.VerifyICRC() {
			t.Fatalf("frame %d: %v", i, err)
		}
		if !isRoCE(fr.Data) || fr.Data[12] != 0x86 {
			t.Fatalf("frame %d is not RoCEv2 over IPv6", i)
		}
	}
	checkCausal(t, frames)
	if f.opened["tapA"].Name != "rnic0" || f.opened["tapB"].Name != "rnic1" || f.closed["tapA"] != 1 || f.closed["tapB"] != 1 {
		t.Errorf("opened %+v, closed %v", f.opened, f.closed)
	}
	if testing.Verbose() {
		t.Log(s)
	}
}

// TestDemoIWARPTAP runs the iWARP steps on the TAP NICs' streams.
func TestDemoIWARPTAP(t *testing.T) {
	f := newFakeTAPs(t, "tapA", "tapB")
	var out bytes.Buffer
	pw, err := embedded.NewPcapWriter(&bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	err = RunIWARP(context.Background(), IWARPConfig{Out: &out, Pcap: pw, Port: 18599,
		TAPA: &tapnic.Config{TAP: "tapA", Prefixes: prefixes("127.0.0.62/8")},
		TAPB: &tapnic.Config{TAP: "tapB", Prefixes: prefixes("127.0.0.63/8")}})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "demo: 6 steps, 6 behaved as specified") {
		t.Errorf("narration:\n%s", out.String())
	}
	// The TAP captures the real frames: the pcap goes to rnic0's TAP.
	if f.opened["tapA"].Pcap != pw || f.opened["tapB"].Pcap != nil || f.closed["tapA"] != 1 || f.closed["tapB"] != 1 {
		t.Errorf("opened %+v, closed %v", f.opened, f.closed)
	}
}

func TestDemoTAPConfigErrors(t *testing.T) {
	a := &tapnic.Config{TAP: "tapA", Prefixes: prefixes("10.77.0.1/24")}
	b := &tapnic.Config{TAP: "tapB", Prefixes: prefixes("10.77.0.2/24")}
	for _, c := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"one TAP", Config{TAPA: a}, "two NICs"},
		{"the other TAP", Config{TAPB: b}, "two NICs"},
		{"same TAP", Config{TAPA: a, TAPB: a}, "both on TAP"},
		{"no address", Config{TAPA: a, TAPB: &tapnic.Config{TAP: "tapB"}}, "an address"},
		{"families", Config{TAPA: a, TAPB: &tapnic.Config{TAP: "tapB", Prefixes: prefixes("fd00::2/64")}}, "family"},
		{"address not its", Config{TAPA: a, TAPB: b, AddrA: netip.MustParseAddr("10.77.0.9")}, "not one of"},
		{"small MTU", Config{TAPA: &tapnic.Config{TAP: "tapA", MTU: 1000, Prefixes: prefixes("10.77.0.1/24")}, TAPB: b}, "path MTU 1024"},
	} {
		err := Run(context.Background(), c.cfg)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrConfig saying %q", c.name, err, c.want)
		}
	}
	if err := RunIWARP(context.Background(), IWARPConfig{TAPA: a}); !errors.Is(err, ErrConfig) {
		t.Errorf("iWARP with one TAP: %v", err)
	}
}

// TestDemoCancelled: a cancelled context ends the demo before its steps.
func TestDemoCancelled(t *testing.T) {
	f := newFakeTAPs(t, "tapA", "tapB")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := Run(ctx, Config{TAPA: &tapnic.Config{TAP: "tapA", Prefixes: prefixes("10.77.0.1/24")},
		TAPB: &tapnic.Config{TAP: "tapB", Prefixes: prefixes("10.77.0.2/24")}})
	if !errors.Is(err, context.Canceled) || f.closed["tapA"] != 1 || f.closed["tapB"] != 1 {
		t.Errorf("%v, closed %v", err, f.closed)
	}
}
