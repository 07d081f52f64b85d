package progkit

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"

	"github.com/rnic/rnic/nic/ibv"
)

// TestAcceptOne: the one client is accepted and the listener closes; a
// cancelled wait returns the context's error and closes it too.
func TestAcceptOne(t *testing.T) {
	l, err := Listen(ibv.KernelNetwork{}, netip.MustParseAddr("127.0.0.1"), false, 0)
	if err != nil {
		t.Fatal(err)
	}
	dialed := make(chan error, 1)
	go func() {
		c, err := net.Dial("tcp", l.Addr().String())
		if err == nil {
			c.Close()
		}
		dialed <- err
	}()
	conn, err := AcceptOne(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	if err := <-dialed; err != nil {
		t.Fatal(err)
	}
	if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("the listener still accepts after its one client: %v", err)
	}

	l, err = Listen(ibv.KernelNetwork{}, netip.MustParseAddr("127.0.0.1"), false, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := AcceptOne(ctx, l); !errors.Is(err, context.Canceled) {
		t.Fatalf("AcceptOne with a cancelled context: %v", err)
	}
}

// recordingNetwork records the address it is asked to listen on.
type recordingNetwork struct {
	ibv.Network
	at netip.AddrPort
}

func (n *recordingNetwork) Listen(at netip.AddrPort) (net.Listener, error) {
	n.at = at
	return nil, errors.New("recorded")
}

// TestListenAnyAddr: a server told to listen on every address does, on
// the port given.
func TestListenAnyAddr(t *testing.T) {
	n := &recordingNetwork{}
	a := netip.MustParseAddr("10.0.0.1")
	Listen(n, a, true, 7)
	if n.at != netip.AddrPortFrom(netip.Addr{}, 7) {
		t.Errorf("anyAddr listens on %v", n.at)
	}
	Listen(n, a, false, 7)
	if n.at != netip.AddrPortFrom(a, 7) {
		t.Errorf("listens on %v, want %v", n.at, netip.AddrPortFrom(a, 7))
	}
}
