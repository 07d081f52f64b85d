package rnicdtest

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"testing"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/ibv"
)

// FakeConfig describes a FakeBackend.
type FakeConfig struct {
	// Port is the NICs' RoCEv2 port.
	Port uint16
	// MTU is their Ethernet MTU (1500 if zero).
	MTU int
	// Net gives the devices an ibv.Network of their own: kernel TCP,
	// counted.
	Net bool
}

// FakeBackend opens the devices of ibv.BackendDaemon for a test without a
// daemon: embedded NICs rnic2 on 127.0.0.2 and rnic3 on 127.0.0.3 behind a
// type of their own, so a tool sees what it would see of rnicd's NIC: no
// local NIC, memory from AllocBuffer, and (with FakeConfig.Net) the
// device's own network for the side channel.
type FakeBackend struct {
	cfg   FakeConfig
	addrs map[string]netip.Addr // device name → its NIC's address

	mu sync.Mutex
	c  FakeCounts
}

// FakeCounts are the calls a FakeBackend's devices saw.
type FakeCounts struct {
	Opens   int // devices opened
	Allocs  int // AllocBuffer calls
	Listens int // Listen calls on the devices' network
	Dials   int // Dial calls on it
	Closes  int // device Close calls
}

// InstallFakeBackend registers a FakeBackend as ibv.BackendDaemon until the
// test ends.
func InstallFakeBackend(t *testing.T, cfg FakeConfig) *FakeBackend {
	t.Helper()
	if cfg.MTU == 0 {
		cfg.MTU = 1500
	}
	f := &FakeBackend{cfg: cfg, addrs: map[string]netip.Addr{
		"rnic2": netip.MustParseAddr("127.0.0.2"), "rnic3": netip.MustParseAddr("127.0.0.3")}}
	prev := ibv.Register(ibv.BackendDaemon, f.open)
	t.Cleanup(func() { ibv.Register(ibv.BackendDaemon, prev) })
	return f
}

// Counts returns the calls so far.
func (f *FakeBackend) Counts() FakeCounts {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.c
}

func (f *FakeBackend) open(s ibv.Spec) (ibv.Device, error) {
	a, ok := f.addrs[s.Name]
	if !ok {
		return nil, fmt.Errorf("fake rnicd: no device %s", s.Name)
	}
	n, err := embedded.Open(embedded.UDPConfig{Name: s.Name, Addr: a, Port: f.cfg.Port, MTU: f.cfg.MTU, NoPoll: true})
	if err != nil {
		return nil, err
	}
	f.count(&f.c.Opens)
	d := &fakeDevice{Device: nic.AsIBV(n.Device, nic.IBVOptions{Close: n.Close}), f: f}
	if f.cfg.Net {
		return &fakeNetDevice{d}, nil
	}
	return d, nil
}

func (f *FakeBackend) count(c *int) {
	f.mu.Lock()
	*c++
	f.mu.Unlock()
}

// fakeDevice hides the local NIC behind its own type.
type fakeDevice struct {
	ibv.Device
	f *FakeBackend
}

// AllocBuffer gives shared memory, as rnicd does.
func (d *fakeDevice) AllocBuffer(n int) (ibv.Buffer, error) {
	d.f.count(&d.f.c.Allocs)
	sh, err := memory.NewShared(n)
	if err != nil {
		return nil, err
	}
	return sharedBuffer{sh}, nil
}

func (d *fakeDevice) Close() error {
	d.f.count(&d.f.c.Closes)
	return d.Device.Close()
}

type sharedBuffer struct{ sh *memory.Shared }

func (b sharedBuffer) Bytes() []byte { return b.sh.Bytes() }
func (b sharedBuffer) Close() error  { return b.sh.Close() }

// fakeNetDevice has a network of its own: kernel TCP, counted.
type fakeNetDevice struct{ *fakeDevice }

func (d *fakeNetDevice) Listen(addr netip.AddrPort) (net.Listener, error) {
	d.f.count(&d.f.c.Listens)
	return ibv.KernelNetwork{}.Listen(addr)
}

func (d *fakeNetDevice) Dial(ctx context.Context, local netip.Addr, remote netip.AddrPort) (net.Conn, error) {
	d.f.count(&d.f.c.Dials)
	return ibv.KernelNetwork{}.Dial(ctx, local, remote)
}
