// The side channel through the daemon (ibv.Network): bytes both ways,
// half-close and close propagation, the TCP addresses a connection
// reports, a client that goes freeing its proxies, the per-client limit.

package client_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/client"
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
	"github.com/rnic/rnic/nic/rnicd/server"
)

func networkOf(t *testing.T, dev ibv.Device) ibv.Network {
	t.Helper()
	n, ok := dev.(ibv.Network)
	if !ok {
		t.Fatalf("%s: not an ibv.Network", dev.Name())
	}
	return n
}

// sidePair listens through client a, dials from client b and returns
// both ends.
func sidePair(t *testing.T, d *rnicdtest.Daemon, a, b ibv.Device) (srv, cli net.Conn, l net.Listener) {
	t.Helper()
	addr := d.NICs[0].Addr
	l, err := networkOf(t, a).Listen(netip.AddrPortFrom(netip.IPv4Unspecified(), 0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	la := l.Addr().(*net.TCPAddr).AddrPort()
	if la.Addr() != addr || la.Port() == 0 {
		t.Fatalf("listener on %v, want the NIC's address %v and a port", la, addr)
	}
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			t.Error(err)
		}
		accepted <- c
	}()
	cli, err = networkOf(t, b).Dial(ctxFor(t, 10*time.Second), addr, la)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	if srv = <-accepted; srv == nil {
		t.FailNow()
	}
	t.Cleanup(func() { srv.Close() })
	// Each end reports the TCP connection's addresses.
	if got := cli.RemoteAddr().(*net.TCPAddr).AddrPort(); got != la {
		t.Errorf("dialer's RemoteAddr %v, want %v", got, la)
	}
	if got, want := srv.RemoteAddr().(*net.TCPAddr).AddrPort(), cli.LocalAddr().(*net.TCPAddr).AddrPort(); got != want || want.Addr() != addr {
		t.Errorf("acceptor's RemoteAddr %v, dialer's LocalAddr %v; want equal, at %v", got, want, addr)
	}
	return srv, cli, l
}

func readN(t *testing.T, c net.Conn, n int) []byte {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	b := make([]byte, n)
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatalf("read %d bytes: %v", n, err)
	}
	return b
}

func expectEOF(t *testing.T, what string, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var b [1]byte
	if n, err := c.Read(b[:]); err != io.EOF {
		t.Fatalf("%s: read %d bytes, %v; want EOF", what, n, err)
	}
}

func TestNetworkEcho(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{})
	a, b := open(t, d, 0), open(t, d, 0)
	srv, cli, _ := sidePair(t, d, a, b)

	big := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB: more than any socket buffer
	go cli.Write(big)
	if got := readN(t, srv, len(big)); !bytes.Equal(got, big) {
		t.Fatal("client → server bytes differ")
	}
	if _, err := srv.Write([]byte("pong")); err != nil {
		t.Fatal(err)
	}
	if got := readN(t, cli, 4); string(got) != "pong" {
		t.Fatalf("server → client %q", got)
	}
	// A half-close travels, and the other way still works after it.
	if err := cli.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	expectEOF(t, "server after the client's CloseWrite", srv)
	if _, err := srv.Write([]byte("after")); err != nil {
		t.Fatal(err)
	}
	if got := readN(t, cli, 5); string(got) != "after" {
		t.Fatalf("server → client after the half-close: %q", got)
	}
	srv.Close()
	expectEOF(t, "client after the server's Close", cli)
}

func TestNetworkListenerClose(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{})
	a := open(t, d, 0)
	l, err := networkOf(t, a).Listen(netip.AddrPortFrom(d.NICs[0].Addr, 0))
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := l.Accept()
		errc <- err
	}()
	time.Sleep(10 * time.Millisecond) // let Accept reach the daemon (either order must work)
	l.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Accept after Close: %v, want net.ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Accept still blocked after Close")
	}
	// The port is closed: a dial is refused.
	if _, err := net.DialTimeout("tcp", l.Addr().String(), 5*time.Second); err == nil {
		t.Fatalf("dial to a closed listener's %v connected", l.Addr())
	}
}

// TestNetworkClientGone: a client whose connection to the daemon ends
// (exit, kill -9) loses its proxies and listeners even though it never
// closed them: the peer reads EOF, the port is free.
func TestNetworkClientGone(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{})
	a, b := open(t, d, 0), open(t, d, 0)
	srv, _, l := sidePair(t, d, a, b)
	b.Close() // the dialer goes, its socket still open here
	expectEOF(t, "server after the dialer's client went", srv)
	port := l.Addr().(*net.TCPAddr).Port
	a.Close() // the listener goes
	deadline := time.Now().Add(5 * time.Second)
	for {
		ln, err := net.Listen("tcp", l.Addr().String())
		if err == nil {
			ln.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("port %d of a client that went: %v", port, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestNetworkLimit(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{Limits: server.Limits{MaxSockets: 2}})
	a := open(t, d, 0)
	any := netip.AddrPortFrom(netip.IPv4Unspecified(), 0)
	for i := range 2 {
		l, err := networkOf(t, a).Listen(any)
		if err != nil {
			t.Fatalf("listener %d: %v", i, err)
		}
		defer l.Close()
	}
	if _, err := networkOf(t, a).Listen(any); !errors.Is(err, client.ErrLimit) {
		t.Fatalf("third listener with MaxSockets 2: %v, want ErrLimit", err)
	}
	if _, err := networkOf(t, a).Dial(ctxFor(t, 5*time.Second), netip.Addr{}, netip.AddrPortFrom(d.NICs[0].Addr, 1)); !errors.Is(err, client.ErrLimit) {
		t.Fatalf("dial with MaxSockets 2 reached: %v, want ErrLimit", err)
	}
}
