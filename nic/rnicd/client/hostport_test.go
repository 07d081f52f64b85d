package client_test

import (
	"errors"
	"net/netip"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/rnic/rnic/nic/rnicd/client"
	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
	"github.com/rnic/rnic/nic/rnicd/server"
	"github.com/rnic/rnic/nic/verbs"
)

// fakePort is a host port that records what it got: one at a time, as a
// TAP-mode NIC takes them.
type fakePort struct {
	mu       sync.Mutex
	attached bool
	detached chan struct{}
	got      []byte // what was read from the descriptor the daemon got
}

func (p *fakePort) attach(f *os.File, _ bool) (server.HostPort, error) {
	defer f.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.attached {
		return server.HostPort{}, verbs.ErrBusy
	}
	p.attached = true
	p.detached = make(chan struct{})
	b := make([]byte, 16)
	n, _ := f.Read(b)
	p.got = b[:n]
	return server.HostPort{MAC: [6]byte{2, 0, 10, 1, 2, 3}, MTU: 9000,
		Prefixes: []netip.Prefix{netip.MustParsePrefix("10.1.2.3/24"), netip.MustParsePrefix("fd00::3/64")},
		Detach: closerFunc(func() error {
			p.mu.Lock()
			p.attached = false
			close(p.detached)
			p.mu.Unlock()
			return nil
		})}, nil
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// TestAttachHostPort: the descriptor reaches the daemon's NIC, the reply
// carries its MAC, a second attach is EBUSY, and the attachment ends with
// the connection; a NIC without host ports says ErrNotSupported, an
// unknown one ErrNoDevice.
func TestAttachHostPort(t *testing.T) {
	fp := &fakePort{}
	d := rnicdtest.Start(t, rnicdtest.Options{NICs: 2, HostPorts: map[string]server.HostPortFunc{"rnic0": fp.attach}})
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	w.Write([]byte("frames"))

	mac, closer, err := client.AttachHostPort(d.Socket, "rnic0", r)
	if err != nil {
		t.Fatal(err)
	}
	fp.mu.Lock()
	got := string(fp.got)
	fp.mu.Unlock()
	if mac.String() != "02:00:0a:01:02:03" || got != "frames" {
		t.Fatalf("MAC %v, the daemon read %q from the descriptor", mac, got)
	}
	if hp, ok := closer.(*client.HostPort); !ok || hp.MTU != 9000 || len(hp.Prefixes) != 2 ||
		hp.Prefixes[0].String() != "10.1.2.3/24" || hp.Prefixes[1].String() != "fd00::3/64" {
		t.Errorf("attachment %#v, want MTU 9000 and the NIC's prefixes", closer)
	}
	if _, _, err := client.AttachHostPort(d.Socket, "rnic0", r); !errors.Is(err, verbs.ErrBusy) {
		t.Errorf("second attach: %v, want ErrBusy", err)
	}
	fp.mu.Lock()
	detached := fp.detached
	fp.mu.Unlock()
	closer.Close()
	select {
	case <-detached:
	case <-time.After(20 * time.Second):
		t.Fatal("closing the connection did not detach the host port")
	}
	w.Write([]byte("again")) // the fake reads the descriptor once more
	if _, c, err := client.AttachHostPort(d.Socket, "rnic0", r); err != nil {
		t.Errorf("attach after detach: %v", err)
	} else {
		c.Close()
	}

	if _, _, err := client.AttachHostPort(d.Socket, "rnic1", r); !errors.Is(err, client.ErrNotSupported) {
		t.Errorf("attach to a NIC without host ports: %v, want ErrNotSupported", err)
	}
	if _, _, err := client.AttachHostPort(d.Socket, "rnic9", r); !errors.Is(err, proto.ErrNoDevice) {
		t.Errorf("attach to no NIC: %v, want ErrNoDevice", err)
	}
}
