package stream_test

import (
	"net/netip"
	"testing"

	"github.com/rnic/rnic/transport/stream"
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
		checkNoLeak(t)
		client, server, _ := tg.setup(t, stream.TCPConfig{})
		c, s, cs, ss, _, _ := contractPair(t, e, client, server, addr) // its listener is closed
		defer func() {
			// Both ends end here, and their onClose (which e's cleanup
			// counts) is waited for, as in the other contract tests: on a
			// busy machine the kernel target's may come late.
			c.Abort()
			s.Abort()
			cs.wait(t, "client")
			ss.wait(t, "server")
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
