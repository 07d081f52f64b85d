package netstack_test

import (
	"net/netip"
	"testing"

	"github.com/rnic/rnic/transport/stream"
	"github.com/rnic/rnic/transport/stream/streamtest"
)

// A port whose listener is closed can be listened on again while a
// connection it accepted lives on, as on Linux (siw's listeners, like Go's
// kernel listeners, set SO_REUSEADDR): perftest -R's server closes its
// rdma_cm listener after the control connection and listens again on the
// same port for the test's (it failed with "port in use" on a TAP NIC's
// TCP).
func TestContractRelistenWhileConnected(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg contractTarget, addr string) {
		e := newEndChecks(t)
		streamtest.CheckNoLeak(t)
		client, server, _ := tg.setup(t, stream.TCPConfig{})
		c, s, cs, ss, _, _ := contractPair(t, e, client, server, addr) // its listener is closed
		defer func() {
			// Both ends end here, and their onClose (which e's cleanup
			// counts) is waited for, as in the other contract tests: on a
			// busy machine the kernel target's may come late.
			c.Abort()
			s.Abort()
			cs.Wait(t, "client")
			ss.Wait(t, "server")
		}()
		at := netip.AddrPortFrom(netip.MustParseAddr(addr), s.LocalAddr().Port())
		l, err := server.Listen(at)
		if err != nil {
			t.Fatalf("Listen on %v again while a connection it accepted lives: %v", at, err)
		}
		// And it accepts.
		accepted := make(chan stream.Conn, 1)
		l.SetAcceptor(func(c stream.Conn) { accepted <- c })
		done := make(chan error, 1)
		var dialed stream.Conn
		client.Dial(netip.Addr{}, at, func(c stream.Conn, err error) {
			dialed = c
			done <- err
		})
		if err := <-done; err != nil {
			t.Errorf("Dial the second listener: %v", err)
		} else {
			(<-accepted).Abort()
			dialed.Abort()
		}
		l.Close()
	})
}

// After a connection on a port has ended with the server closing first
// (its end waits in TIME_WAIT), every address's port can be listened on
// again, as Linux lets a SO_REUSEADDR listener: two rnic pingpong runs one
// after the other through one TAP-mode rnicd failed the second with "port
// is in use" (the first run's side channel in TIME_WAIT).
func TestContractRelistenAfterTimeWait(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg contractTarget, addr string) {
		e := newEndChecks(t)
		streamtest.CheckNoLeak(t)
		client, server, _ := tg.setup(t, stream.TCPConfig{})
		any := netip.IPv4Unspecified()
		if netip.MustParseAddr(addr).Is6() {
			any = netip.IPv6Unspecified()
		}
		l, err := server.Listen(netip.AddrPortFrom(any, 0))
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().Port()
		accepted := make(chan stream.Conn, 1)
		l.SetAcceptor(func(c stream.Conn) { accepted <- c })
		done := make(chan error, 1)
		var c stream.Conn
		client.Dial(netip.Addr{}, netip.AddrPortFrom(netip.MustParseAddr(addr), port), func(conn stream.Conn, err error) {
			c = conn
			done <- err
		})
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		s := <-accepted
		ss, cs := e.sink("server", guardedSink(s, e.guard("server"))), e.sink("client", guardedSink(c, e.guard("client")))
		l.Close()
		s.Close() // the server ends first: its end goes to TIME_WAIT
		cs.Wait(t, "client")
		c.Close()
		ss.Wait(t, "server")
		again, err := server.Listen(netip.AddrPortFrom(any, port))
		if err != nil {
			t.Fatalf("Listen on port %d again after its connection ended: %v", port, err)
		}
		again.Close()
	})
}
