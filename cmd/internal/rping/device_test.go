// rping on a device opened by its string (--ib-dev): a fake backend
// registered with ibv.Register stands in for rnicd.

package rping

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rdmacm"
)

// fakeDaemonAddr is the address of the NIC the fake rnicd backend opens.
var fakeDaemonAddr = netip.MustParseAddr("127.0.9.7")

// fakeBackend registers an opener for rnicd's device strings that builds
// an in-process NIC at fakeDaemonAddr, with rdma_cm if withCM, and records
// what it was asked for and whether the device was closed. The real
// backends register themselves the same way.
type fakeBackend struct {
	mu     sync.Mutex
	opened []ibv.Spec
	closed int
}

func registerFake(t *testing.T, withCM bool) *fakeBackend {
	f := &fakeBackend{}
	prev := ibv.Register(ibv.BackendDaemon, func(s ibv.Spec) (ibv.Device, error) {
		f.mu.Lock()
		f.opened = append(f.opened, s)
		f.mu.Unlock()
		n, err := openKernelNIC(fakeDaemonAddr, nil, &Config{Device: ibv.Spec{Name: s.Name}})
		if err != nil {
			return nil, err
		}
		closeNIC := func() error {
			f.mu.Lock()
			f.closed++
			f.mu.Unlock()
			return n.Close()
		}
		if !withCM {
			return nic.AsIBV(n.Device, nic.IBVOptions{Close: closeNIC}), nil
		}
		return rdmacm.LocalWith(n, rdmacm.Config{}, nic.IBVOptions{Close: closeNIC})
	})
	t.Cleanup(func() { ibv.Register(ibv.BackendDaemon, prev) })
	return f
}

func (f *fakeBackend) result() ([]ibv.Spec, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]ibv.Spec(nil), f.opened...), f.closed
}

// TestPingRoCEOpenedDevice: a client given a daemon's device string runs
// on the device ibv.Open returns (here a fake backend's), not on a NIC of
// its own (it is given no -I; the device's rdma_cm picks its address):
// every ping comes back intact, and Run closes the device when done.
func TestPingRoCEOpenedDevice(t *testing.T) {
	f := registerFake(t, true)
	spec, err := ibv.ParseSpec("rnic7@/run/fake.sock")
	if err != nil {
		t.Fatal(err)
	}
	s, cl, _ := rocePair(t, Config{Verbose: true}, Config{Verbose: true, Validate: true, Count: 3, Device: spec})
	if err := wait(t, "client", cl.res); err != nil {
		t.Fatalf("client: %v\nstderr: %s", err, cl.err.String())
	}
	if err := wait(t, "server", s.res); err != nil {
		t.Fatalf("server: %v\nstderr: %s", err, s.err.String())
	}
	var want strings.Builder
	buf := make([]byte, DefaultSize)
	for n := range 3 {
		FillPing(buf, n)
		fmt.Fprintf(&want, "ping data: %s\n", cString(buf))
	}
	if got := cl.out.String(); got != want.String() {
		t.Errorf("client stdout:\n%s\nwant\n%s", got, want.String())
	}
	opened, closed := f.result()
	if len(opened) != 1 || opened[0] != spec || closed != 1 {
		t.Fatalf("backend opened %v and closed %d devices; want [%v] and 1", opened, closed, spec)
	}
	if !strings.Contains(s.out.String(), "server ping data: rdma-ping-2") {
		t.Errorf("server stdout %q", s.out.String())
	}
}

// TestOpenedDeviceErrors: a device without rdma_cm, an -I the device does
// not own, and a backend this program lacks each fail Run, and a device
// opened is closed again.
func TestOpenedDeviceErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	daemon := ibv.Spec{Backend: ibv.BackendDaemon, Name: "rnic7", Socket: "/run/fake.sock"}
	server := netip.MustParseAddr("127.0.9.1")

	f := registerFake(t, false)
	err := Run(ctx, Config{Addr: server, Count: 1, Device: daemon})
	if err == nil || !strings.Contains(err.Error(), "offers no rdma_cm") {
		t.Errorf("Run on a device without rdma_cm: %v", err)
	}
	if _, closed := f.result(); closed != 1 {
		t.Errorf("the device without rdma_cm was closed %d times, want 1", closed)
	}

	f = registerFake(t, true)
	err = Run(ctx, Config{Addr: server, Count: 1, Device: daemon, Source: netip.MustParseAddr("127.0.9.2")})
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "-I 127.0.9.2") {
		t.Errorf("Run with an -I the device does not own: %v", err)
	}
	if _, closed := f.result(); closed != 1 {
		t.Errorf("the device was closed %d times, want 1", closed)
	}

	err = Run(ctx, Config{Addr: server, Count: 1, Device: ibv.Spec{Backend: ibv.BackendVerbs, Name: "rxe0"}})
	if !errors.Is(err, ibv.ErrNoBackend) {
		t.Errorf("Run on verbs:rxe0 without the passthrough backend: %v, want ErrNoBackend", err)
	}
}
